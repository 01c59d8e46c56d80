/**
 * The tokens the tests configure the service with, one of each kind, and the variable that sets it. A test
 * whose point is a token of its own (a wrong one, one per role, one that must not be shared) declares that one
 * itself; every other test takes these. Each is at least 16 characters, as lib/config.ts asks, and none starts
 * like another.
 */

/** INTERNAL_API_TOKEN: the internal API's bearer token (`Authorization: Bearer …` on /internal/v1). */
export const INTERNAL_TOKEN = 'internal-api-token-for-tests-0123';
/** PARTNER_ACCESS_TOKEN: the bearer token the worker sends the partner; no log line or history may hold it. */
export const PARTNER_TOKEN = 'partner-access-token-for-tests-must-not-leak';
/** CODEC_AUTH_TOKEN: the codec endpoint's token (it goes into a URL path: letters, digits and `-` only). */
export const CODEC_TOKEN = 'codec-auth-token-for-tests-0123';
/** SCIM_BEARER_TOKEN: the SCIM API's bearer token. */
export const SCIM_TOKEN = 'scim-bearer-token-for-tests-0123';
