import type { Knex } from 'knex';
import { DETAIL, ListingError } from '../errors';
import { fetchPageRows, type PageWindow, type UserRow } from '../page-query';
import type { ListingScope } from '../scope';
import type { Cursor } from './cursor';
import type { PageSelection } from './page-params';

/** Where a `next` or `previous` link leads: a cursor, or none for the plain first page. */
export interface LinkTarget {
  readonly page: number;
  readonly cursor: Cursor | null;
}

export interface LoadedPage {
  readonly count: number;
  readonly rows: readonly UserRow[];
  readonly next: LinkTarget | null;
  readonly previous: LinkTarget | null;
}

/**
 * Reads one page and works out its neighbours. Windows read one row beyond the page to learn whether
 * another page follows in their direction. `last` reads the final page backwards from the end.
 */
export async function loadPage(
  knex: Knex,
  scope: ListingScope,
  selection: PageSelection,
  size: number,
): Promise<LoadedPage> {
  const window = windowFor(selection, size);
  const { total, rows } = await fetchPageRows(knex, scope, window);
  const page = arrangePage(selection, size, total, rows);
  if (page.rows.length === 0 && page.number > 1) throw new ListingError(404, DETAIL.invalidPage);
  const first = page.rows[0];
  const last = page.rows.at(-1);
  return {
    count: total,
    rows: page.rows,
    next:
      page.hasNext && last
        ? { page: page.number + 1, cursor: { direction: 'next', page: page.number + 1, boundary: last.id } }
        : null,
    previous: page.hasPrevious && first ? previousTarget(page.number - 1, first.id) : null,
  };
}

function windowFor(selection: PageSelection, size: number): PageWindow {
  switch (selection.kind) {
    case 'number': {
      const offset = (selection.page - 1) * size;
      if (!Number.isSafeInteger(offset)) throw new ListingError(404, DETAIL.invalidPage);
      return { order: 'asc', boundary: null, offset, limit: size + 1 };
    }
    case 'last':
      return { order: 'desc', boundary: null, offset: 0, limit: size };
    case 'cursor': {
      const { direction, boundary } = selection.cursor;
      return { order: direction === 'next' ? 'asc' : 'desc', boundary, offset: 0, limit: size + 1 };
    }
  }
}

interface ArrangedPage {
  readonly number: number;
  /** The page's users in ascending id order. */
  readonly rows: UserRow[];
  readonly hasNext: boolean;
  readonly hasPrevious: boolean;
}

function arrangePage(selection: PageSelection, size: number, total: number, rows: UserRow[]): ArrangedPage {
  const overflow = rows.length > size;
  switch (selection.kind) {
    case 'number':
      return { number: selection.page, rows: rows.slice(0, size), hasNext: overflow, hasPrevious: selection.page > 1 };
    case 'last': {
      const lastPage = Math.max(1, Math.ceil(total / size));
      const onLastPage = total - (lastPage - 1) * size;
      return { number: lastPage, rows: rows.slice(0, onLastPage).reverse(), hasNext: false, hasPrevious: lastPage > 1 };
    }
    case 'cursor': {
      const { direction, page } = selection.cursor;
      if (direction === 'next')
        return { number: page, rows: rows.slice(0, size), hasNext: overflow, hasPrevious: true };
      return { number: page, rows: rows.slice(0, size).reverse(), hasNext: true, hasPrevious: overflow };
    }
  }
}

/** As in DRF, the link back to page 1 is the plain listing URL. */
function previousTarget(page: number, firstId: number): LinkTarget {
  return page <= 1 ? { page: 1, cursor: null } : { page, cursor: { direction: 'previous', page, boundary: firstId } };
}
