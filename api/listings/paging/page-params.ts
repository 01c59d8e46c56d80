import { DETAIL, ListingError } from '../errors';
import type { ListingScope } from '../scope';
import { decodeCursor, type Cursor } from './cursor';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;
export const PAGE_PARAM = 'page';
export const PAGE_SIZE_PARAM = 'page_size';
export const CURSOR_PARAM = 'cursor';
export const LAST_PAGE = 'last';

/** Which page a request asks for. */
export type PageSelection =
  | { readonly kind: 'number'; readonly page: number }
  | { readonly kind: 'last' }
  | { readonly kind: 'cursor'; readonly cursor: Cursor };

/** Django's QueryDict.get: the last of repeated values. */
const lastValue = (query: URLSearchParams, name: string): string | undefined => query.getAll(name).at(-1);

/** Python's int() on a query value: optional surrounding space and sign, decimal digits. */
function parseInteger(text: string): number | undefined {
  return /^\s*[+-]?\d+\s*$/.test(text) ? Number(text) : undefined;
}

/** DRF's get_page_size: a positive integer, capped at the maximum; anything else means the default. */
export function readPageSize(query: URLSearchParams): number {
  const text = lastValue(query, PAGE_SIZE_PARAM);
  const size = text === undefined ? undefined : parseInteger(text);
  if (size === undefined || size < 1) return DEFAULT_PAGE_SIZE;
  return Math.min(size, MAX_PAGE_SIZE);
}

/**
 * `page` (1-based, or `last`) and the `cursor` our own links carry. When both are given they must agree,
 * since links carry both so that clients reading `page` from them keep working.
 */
export function readPageSelection(query: URLSearchParams, scope: ListingScope): PageSelection {
  const pageText = lastValue(query, PAGE_PARAM);
  const cursorText = lastValue(query, CURSOR_PARAM);
  if (cursorText !== undefined) {
    const cursor = decodeCursor(scope, cursorText);
    if (pageText !== undefined && parseInteger(pageText) !== cursor.page)
      throw new ListingError(404, DETAIL.invalidCursor);
    return { kind: 'cursor', cursor };
  }
  if (pageText === undefined) return { kind: 'number', page: 1 };
  if (pageText === LAST_PAGE) return { kind: 'last' };
  const page = parseInteger(pageText);
  if (page === undefined || page < 1) throw new ListingError(404, DETAIL.invalidPage);
  return { kind: 'number', page };
}
