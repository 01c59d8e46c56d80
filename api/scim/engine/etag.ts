import { raw, type SqlFragment } from '../../../db/sql';

/** meta.version and the ETag header: a weak entity tag of a version counter. */
export const weakEtag = (version: number | string) => `W/"${version}"`;

/** The same tag in SQL, for filters on meta.version; `column` is trusted source text. */
export const weakEtagSql = (column: string): SqlFragment => raw(`('W/"' || ${column} || '"')`);
