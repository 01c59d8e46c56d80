import { sql, type SqlFragment } from '../../../db/sql';

/** A resource's meta.location, in JavaScript for responses and in SQL for filters on it. */

export const resourceLocation = (baseUrl: string, endpoint: string, id: string) => `${baseUrl}${endpoint}/${id}`;

/** `idText` is the resource id as SQL text, such as `g.id::text`. */
export const resourceLocationSql = (baseUrl: string, endpoint: string, idText: SqlFragment): SqlFragment =>
  sql`(${`${baseUrl}${endpoint}/`} || ${idText})`;
