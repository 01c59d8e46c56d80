import type { Middleware } from 'koa';
import type { TokenCheck, TokenChecker } from '../../application/access/token-checker';
import { bearerTokenChecker } from '../../lib/bearer-token';
import { requireChecked, type AuthenticatedState } from '../internal/bearer-auth';

/** The actor the shared CODEC_AUTH_TOKEN stands for: it has the scope `decode` and no other. */
export const CODEC_SHARED_TOKEN_ACTOR = 'CODEC_AUTH_TOKEN';

/** Logged once when the codec is mounted with CODEC_AUTH_TOKEN set (never the token itself). */
export const CODEC_SHARED_TOKEN_WARNING =
  'CODEC_AUTH_TOKEN is set: it is a shared token that decrypts every Temporal payload, and it cannot be ' +
  'revoked without a restart; ' +
  'give each person or tool a named token with the scope decode (partner-service tokens create --scope ' +
  'decode), then unset it (docs/access.md, "Tokens and scopes")';

/**
 * The codec's two token forms, each checked like the internal API's tokens: CODEC_AUTH_TOKEN (compared in
 * constant time), or a named token of the api process's own TokenChecker, which needs `decode`. A revoked named
 * token is refused within REVOCATION_BOUND_MS, as on the internal API.
 */
export function codecAuth(
  tokens: TokenChecker,
  sharedToken: string | undefined,
): { bearer: Middleware<AuthenticatedState>; pathToken: Middleware<AuthenticatedState> } {
  const shared = sharedToken ? bearerTokenChecker(sharedToken) : undefined;
  const check = (authorization: string): TokenCheck =>
    shared?.(authorization) === 'valid'
      ? { kind: 'valid', actor: CODEC_SHARED_TOKEN_ACTOR, scopes: ['decode'] }
      : tokens.check(authorization);
  return {
    bearer: requireChecked(check, 'codec', ['decode']),
    // Temporal UI cannot send a header: the token is the path's, checked as if it came as a Bearer token.
    pathToken: requireChecked((_header, ctx) => check(`Bearer ${ctx.params?.token ?? ''}`), 'codec', ['decode']),
  };
}
