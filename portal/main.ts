import { call, problem, whenSessionEnds } from './api.js';
import { auditPage } from './audit-page.js';
import { catalogPage } from './catalog-page.js';
import type { Page, PageContext, PortalApp } from './context.js';
import { deliveriesPage } from './deliveries-page.js';
import { deliveryPage } from './delivery-page.js';
import { h } from './dom.js';
import { endpointPage } from './endpoint-page.js';
import { healthPage } from './health-page.js';
import { recoveryPage } from './recovery-page.js';

// The partner portal: opens the session from a link's fragment (then drops the token from the address), shows the
// pages the session's scopes allow, and notices within 2 s when the session ends (expired, signed out, revoked).

interface Section {
  readonly name: string;
  readonly title: string;
  readonly scope: string;
  readonly page: Page;
}

const SECTIONS: readonly Section[] = [
  { name: 'deliveries', title: 'Deliveries', scope: 'deliveries:read', page: deliveriesPage },
  { name: 'recovery', title: 'Recovery', scope: 'deliveries:write', page: recoveryPage },
  { name: 'endpoint', title: 'Endpoint', scope: 'endpoint:manage', page: endpointPage },
  { name: 'health', title: 'Health', scope: 'deliveries:read', page: healthPage },
  { name: 'catalog', title: 'Event catalog', scope: 'deliveries:read', page: catalogPage },
  { name: 'audit', title: 'Audit', scope: 'deliveries:read', page: auditPage },
];
/** One webhook's page, reached from the lists. */
const WEBHOOK: Section = { name: 'webhooks', title: 'Delivery', scope: 'deliveries:read', page: deliveryPage };

const SESSION_CHECK_MS = 2000;

const view = () => document.getElementById('view')!;
let ended = false;
/** Moves so far: a page whose answers come after a later move is dropped. */
let navigations = 0;

/** Replaces the whole page with a message: a refused link, or a session that ended. */
function stop(title: string, text: string): void {
  ended = true;
  document.getElementById('nav')?.replaceChildren();
  document.getElementById('sign-out')?.remove();
  view().replaceChildren(h('h2', { id: 'ended' }, title), h('p', {}, text));
  document.title = `${title}: partner portal`;
  view().focus();
}

const sessionEnded = () =>
  stop('Your session has ended', 'It expired, was signed out, or its app was revoked. Ask for a new portal link.');

async function route(app: PortalApp, allowed: readonly Section[]): Promise<void> {
  if (ended) return;
  const [name, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const [last, query = ''] = (rest.length ? rest.join('/') : name).split('?');
  const section =
    name.split('?')[0] === WEBHOOK.name && allowed.includes(SECTIONS[0])
      ? WEBHOOK
      : allowed.find((s) => s.name === name.split('?')[0]);
  if (!section) {
    if (allowed[0]) location.replace(`#/${allowed[0].name}`);
    else
      view().replaceChildren(h('h2', {}, 'Nothing to show'), h('p', {}, 'This session has no scope the portal shows.'));
    return;
  }
  const context: PageContext = {
    app,
    can: (scope) => app.scopes.includes(scope),
    path: rest.length ? last : '',
    params: new URLSearchParams(query),
  };
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('href') === `#/${section.name}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.title = `${section.title}: partner portal`;
  // The page is built apart and shown only if no later move replaced it while its answers were on the way.
  const navigation = ++navigations;
  const container = h('div', {});
  await section.page(container, context);
  if (navigation === navigations && !ended) view().replaceChildren(container);
}

async function openFromLink(token: string): Promise<boolean> {
  // The token leaves the address before anything else happens, so it is in no history entry or later URL.
  history.replaceState(null, '', location.pathname);
  const opened = await call('POST', '/portal-sessions/open', { token });
  if (opened.status === 201) return true;
  stop('This link cannot be used', problem(opened));
  return false;
}

async function main(): Promise<void> {
  whenSessionEnds(sessionEnded);
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (token && !(await openFromLink(token))) return;
  const answer = await call<PortalApp>('GET', '/app');
  if (answer.status !== 200) {
    stop(
      'No portal session',
      'Open the portal with a link from your operator or from POST /partner/v1/portal-sessions.',
    );
    return;
  }
  const app = answer.body;
  const allowed = SECTIONS.filter((section) => app.scopes.includes(section.scope));
  document.getElementById('who')!.textContent = `${app.name} (${app.app_id})`;
  document
    .getElementById('nav')!
    .replaceChildren(
      h('ul', {}, ...allowed.map((section) => h('li', {}, h('a', { href: `#/${section.name}` }, section.title)))),
    );
  const signOut = document.getElementById('sign-out') as HTMLButtonElement;
  signOut.hidden = false;
  signOut.addEventListener(
    'click',
    () =>
      void call('DELETE', '/portal-sessions/current').then(() =>
        stop('Signed out', 'Your portal session has ended. Ask for a new portal link to come back.'),
      ),
  );
  window.addEventListener('hashchange', () => void route(app, allowed).then(() => view().focus()));
  const checkSession = async () => {
    if (ended) return;
    const check = await call('GET', '/app');
    if (check.status === 403) sessionEnded();
  };
  window.setInterval(() => void checkSession(), SESSION_CHECK_MS);
  await route(app, allowed);
}

void main();
