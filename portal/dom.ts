// The portal's one way of making elements: h(tag, attributes, ...children). Text is always set as text, never as
// HTML, so nothing a webhook carries can run in the page.

type Child = Node | string | number | null | undefined | false;
type Attribute = string | number | boolean | undefined | ((event: Event) => unknown);

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, Attribute> = {},
  ...children: Array<Child | Child[]>
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== undefined) element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

/** Replaces what `parent` holds with `children`, the absent ones left out (a control the scopes do not allow). */
export function fill(parent: Element, ...children: Array<Child | Child[]>): void {
  parent.replaceChildren(
    ...children
      .flat()
      .filter((child): child is Node | string | number => child !== null && child !== undefined && child !== false)
      .map((child) => (child instanceof Node ? child : String(child))),
  );
}

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element with its attributes (the health chart). */
export function svg(tag: string, attributes: Record<string, string | number>, ...children: Node[]): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

/** Says `text` in the page's live region, so a screen reader hears what an action did. */
export function announce(text: string): void {
  const status = document.getElementById('status');
  if (status) status.textContent = text;
}

/** A time as the reader's locale writes it, with the ISO value kept in a <time> element. */
export function time(iso: string | null | undefined): Node | string {
  if (!iso) return '–';
  return h('time', { datetime: iso }, new Date(iso).toLocaleString());
}

/** A table with a caption, its header row and its rows, scrolling sideways on a narrow screen. */
export function table(caption: string, headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<Child>>): Node {
  return h(
    'div',
    { class: 'scroll', role: 'region', 'aria-label': caption, tabindex: 0 },
    h(
      'table',
      {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, ...headers.map((header) => h('th', { scope: 'col' }, header)))),
      h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((cell) => h('td', {}, cell))))),
    ),
  );
}

/** A labelled form field. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement): Node {
  return h('label', { class: 'field' }, h('span', {}, label), control);
}

/** A definition list of label and value pairs. */
export function facts(pairs: ReadonlyArray<readonly [string, Child]>): Node {
  return h(
    'dl',
    { class: 'facts' },
    ...pairs.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value ?? '–')]),
  );
}

/** A JSON value, indented, as text. */
export const jsonBlock = (value: unknown): Node =>
  h('pre', { class: 'json', tabindex: 0 }, JSON.stringify(value, null, 2));
