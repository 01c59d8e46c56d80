import type { Context } from 'koa';
import { requestOrigin } from '../../request-origin';
import { invalidValue } from './errors';

export const SCIM_PREFIX = '/scim/v2';

/** The absolute SCIM base URL of this request, for `location` and `$ref`; a bad Host header is a 400. */
export function scimBaseUrl(ctx: Context): string {
  const origin = requestOrigin(ctx);
  if (!origin) throw invalidValue('Invalid Host header.');
  return `${origin}${SCIM_PREFIX}`;
}
