// What every page is given: the app and its scopes, the page's address parameters, and a way to move.

export interface PortalApp {
  readonly app_id: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly company_ids: readonly string[];
}

export interface PageContext {
  readonly app: PortalApp;
  /** Whether the session may do what `scope` allows: the page offers nothing else. */
  readonly can: (scope: string) => boolean;
  /** The part of the address after `#/page/`, and its query. */
  readonly path: string;
  readonly params: URLSearchParams;
}

export type Page = (view: HTMLElement, context: PageContext) => Promise<void>;

/** Moves to a page of the portal, `#/name...`. */
export function go(hash: string): void {
  location.hash = hash;
}

/** `#/name?query` for a page and its parameters, the empty ones left out. */
export function pageHash(name: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => !!entry[1]));
  const text = query.toString();
  return `#/${name}${text ? `?${text}` : ''}`;
}
