import type { Knex } from 'knex';
import { totalQuery } from './count-query';
import { membersQuery } from './members-query';
import { runSql, type SqlFragment } from '../../db/sql';
import type { ListingScope } from './scope';

/** A slice of the listing in user id order: `order` is the reading direction from `boundary` (exclusive). */
export interface PageWindow {
  readonly order: 'asc' | 'desc';
  /** Keyset bound: only ids after it (asc) or before it (desc); null reads from the start or the end. */
  readonly boundary: number | null;
  readonly offset: number;
  readonly limit: number;
}

/** A listed user: the columns of spec 2.5 (users joined with the role that gives access). */
export interface UserRow {
  readonly id: number;
  readonly first_name: string;
  readonly last_name: string;
  readonly email_primary: string;
  readonly emails: string[];
  readonly is_agency_user: boolean;
  readonly role: string;
}

export interface PageRows {
  /** How many users the whole listing has. */
  readonly total: number;
  /** The window's rows, in the window's reading order. */
  readonly rows: UserRow[];
}

const DIRECTION = { asc: { sql: 'ASC', compare: '>' }, desc: { sql: 'DESC', compare: '<' } } as const;

/**
 * Count and page in one statement (one round trip, one snapshot); the count is the counter the triggers of
 * migration 009 keep. The window is cut from the memberships before users are joined, so the join is one
 * lookup per listed user; with a keyset boundary the window is an index range scan from that id, so its
 * cost does not grow with depth.
 */
function pageQuery(scope: ListingScope, window: PageWindow): SqlFragment {
  const members = membersQuery(scope);
  const total = totalQuery(scope);
  const direction = DIRECTION[window.order];
  const bound = window.boundary === null ? '' : `WHERE m.user_id ${direction.compare} ?`;
  return {
    sql: `SELECT t.total, p.* FROM (SELECT COALESCE((${total.sql}), 0) AS total) t
      LEFT JOIN LATERAL (
        SELECT u.id, u.first_name, u.last_name, u.email_primary, u.emails, u.is_agency_user, w.role
        FROM (
          SELECT m.user_id, m.role FROM (${members.sql}) m
          ${bound}
          ORDER BY m.user_id ${direction.sql}
          LIMIT ? OFFSET ?
        ) w
        JOIN users u ON u.id = w.user_id
      ) p ON true
      ORDER BY p.id ${direction.sql}`,
    bindings: [
      ...total.bindings,
      ...members.bindings,
      ...(window.boundary === null ? [] : [window.boundary]),
      window.limit,
      window.offset,
    ],
  };
}

export async function fetchPageRows(knex: Knex, scope: ListingScope, window: PageWindow): Promise<PageRows> {
  const result = await runSql<UserRow & { total: number }>(knex, pageQuery(scope, window));
  // An empty window still yields one row, carrying the total and NULL user columns.
  return { total: result[0]?.total ?? 0, rows: result.filter((row) => row.id !== null) };
}
