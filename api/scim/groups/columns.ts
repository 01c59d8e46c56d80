import { isCanonicalUuid } from '../../../lib/validation';
import { weakEtagSql } from '../engine/etag';
import { raw } from '../../../db/sql';

/** Group ids are lower-case UUIDs and compare exactly (caseExact); anything else names no group. */
export const isGroupId = isCanonicalUuid;

/** The group row's columns as filters and sorting read them; `g` is the group row. */

export const GROUP_ID = raw('g.id');
export const GROUP_ID_TEXT = raw('g.id::text');
// An empty externalId is served as absent, so filters and sorting treat it as absent too.
export const EXTERNAL_ID = raw("NULLIF(g.external_id, '')");
export const DISPLAY_NAME = raw('g.display_name');
export const CREATED = raw('g.created');
export const LAST_MODIFIED = raw('g.last_modified');
export const GROUP_VERSION = weakEtagSql('g.version');
