import { raw, sql, type SqlFragment } from './sql-fragment';

/** Absolute URLs of resources, in JavaScript for responses and in SQL for filters on them. */

/** Collection path of a member type: `User` members live under /Users, `Group` members under /Groups. */
const collectionOf = (type: string) => (type === 'User' ? 'Users' : 'Groups');

export const groupLocation = (baseUrl: string, id: string) => `${baseUrl}/Groups/${id}`;

export const memberReference = (baseUrl: string, type: string, value: string) =>
  `${baseUrl}/${collectionOf(type)}/${value}`;

export const groupLocationSql = (baseUrl: string): SqlFragment => sql`(${`${baseUrl}/Groups/`} || g.id::text)`;

export const memberReferenceSql = (baseUrl: string): SqlFragment =>
  sql`(${`${baseUrl}/`} || ${raw("CASE WHEN m.type = 'User' THEN 'Users/' ELSE 'Groups/' END")} || m.value)`;
