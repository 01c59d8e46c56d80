export const SCIM_MEDIA_TYPE = 'application/scim+json; charset=utf-8';
export const JSON_MEDIA_TYPE = 'application/json; charset=utf-8';

/**
 * Every SCIM response is application/scim+json (RFC 7644 section 3.1), or application/json when the
 * request's Accept names only that. Anything else, HTML included, still gets SCIM JSON.
 */
export function negotiatedMediaType(accept: string | undefined): string {
  const ranges = (accept ?? '')
    .split(',')
    .map((range) => range.split(';')[0].trim().toLowerCase())
    .filter(Boolean);
  return ranges.length > 0 && ranges.every((range) => range === 'application/json') ? JSON_MEDIA_TYPE : SCIM_MEDIA_TYPE;
}
