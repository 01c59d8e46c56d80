// Every call the portal makes: to /partner/v1, with the session cookie the browser holds (never the app's key), and
// on a write the session's X-CSRF-Token, read from the portal_csrf cookie.

export interface Answer<T = Record<string, unknown>> {
  readonly status: number;
  readonly body: T;
  /** The body as it came, byte for byte (decoded as UTF-8). */
  readonly text: string;
}

const SAFE = new Set(['GET', 'HEAD']);

function csrfToken(): string {
  const found = document.cookie.split('; ').find((pair) => pair.startsWith('portal_csrf='));
  return found ? decodeURIComponent(found.slice('portal_csrf='.length)) : '';
}

let onSessionEnded: () => void = () => {};

/** What the page does when an answer says the session ended (expired, signed out, the app revoked). */
export function whenSessionEnds(handler: () => void): void {
  onSessionEnded = handler;
}

export async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer<T>> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (!SAFE.has(method)) headers['X-CSRF-Token'] = csrfToken();
  const response = await fetch(`/partner/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await response.text();
  const parsed = text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  if (response.status === 403 && parsed?.reason === 'session_ended') onSessionEnded();
  return { status: response.status, body: parsed as T, text };
}

/** The error's own words (`detail`), or its status. */
export function problem(answer: Answer<unknown>): string {
  const detail = (answer.body as { detail?: unknown } | null)?.detail;
  return typeof detail === 'string' ? detail : `The service answered ${answer.status}.`;
}

/** The `cursor` of a `next` or `previous` link, for the page's own address. */
export function cursorOf(link: unknown): string | undefined {
  if (typeof link !== 'string') return undefined;
  return new URL(link, location.origin).searchParams.get('cursor') ?? undefined;
}
