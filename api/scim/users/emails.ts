import { raw, sql, type SqlFragment } from '../../../db/sql';

/**
 * A user's e-mail addresses: the `emails` array, primary first. Filters read them one element at a
 * time as `e` (value, n), n being the 1-based position, so `primary` is `n = 1`.
 */

export const EMAIL_VALUE = raw('e.value');
export const EMAIL_PRIMARY = raw('(e.n = 1)');

export function emailExists(condition: SqlFragment): SqlFragment {
  return sql`EXISTS (SELECT 1 FROM unnest(u.emails) WITH ORDINALITY AS e(value, n) WHERE ${condition})`;
}

/**
 * `emails.value eq x`: the GIN index of migration 010 on the folded addresses finds the candidate users;
 * no index can see into the EXISTS over unnest(). pis_fold_array applies `folded` to each element; it folds
 * the value too, because `folded`'s explicit COLLATE "C" would not match the index's collation.
 */
export const emailsContaining = (value: string): SqlFragment =>
  sql`pis_fold_array(u.emails) @> pis_fold_array(ARRAY[${value}::text])`;
