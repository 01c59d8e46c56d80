import type { Middleware } from 'koa';
import type { OperatorContext } from '../../application/audit';
import type { TokenChecker } from '../../application/token-checker';
import type { RequestIdState } from '../request-id';
import { bearerTokenChecker } from '../../lib/bearer-token';
import type { TokenScope } from '../../lib/vocabulary';
import { InternalApiError } from './errors';

const challenge = (realm: string, error?: string, scope?: string) => ({
  'WWW-Authenticate': `Bearer realm="${realm}"${error ? `, error="${error}"` : ''}${scope ? `, scope="${scope}"` : ''}`,
});
const NO_CREDENTIALS = 'Authentication credentials were not provided.';

/** Requires `Authorization: Bearer <token>`, compared in constant time; 401 (naming `realm`) otherwise. */
export function requireBearerToken(token: string, realm = 'internal'): Middleware {
  const check = bearerTokenChecker(token);
  return async function requireInternalToken(ctx, next) {
    const result = check(ctx.get('authorization'));
    if (result !== 'valid') {
      throw new InternalApiError(401, { detail: result === 'missing' ? NO_CREDENTIALS : 'Invalid token.' }, challenge(realm, result === 'missing' ? undefined : 'invalid_token'));
    }
    await next();
  };
}

/** The actor a request was authenticated as, for the audit trail and Temporal's identity. */
export interface AuthenticatedState {
  actor: string;
}

/** Who makes a request's change, for the audit trail: its actor (set by requireScope) and its request id (api/request-id.ts). */
export function operatorOf(ctx: { state: Partial<AuthenticatedState & RequestIdState> }): OperatorContext {
  if (ctx.state.actor === undefined) throw new Error('operatorOf needs requireScope before it');
  return { actor: ctx.state.actor, requestId: ctx.state.requestId };
}

/**
 * Requires a token (named, or the shared INTERNAL_API_TOKEN) with one of `scopes`: 401 without a token or with
 * an unknown, revoked or expired one; 403 naming the scope when the token lacks it. The route's actor goes to
 * `ctx.state.actor`.
 */
export function requireScope(tokens: TokenChecker, ...scopes: [TokenScope, ...TokenScope[]]): Middleware<AuthenticatedState> {
  const needed = scopes.length === 1 ? `the scope "${scopes[0]}"` : `one of the scopes ${scopes.map((s) => `"${s}"`).join(', ')}`;
  return async function requireTokenScope(ctx, next) {
    const result = tokens.check(ctx.get('authorization'));
    switch (result.kind) {
      case 'missing':
        throw new InternalApiError(401, { detail: NO_CREDENTIALS }, challenge('internal'));
      case 'invalid':
        throw new InternalApiError(401, { detail: result.detail }, challenge('internal', 'invalid_token'));
      case 'unavailable':
        throw new InternalApiError(503, { detail: result.detail, reason: 'token_store_unavailable' }, { 'Retry-After': '5' });
      case 'valid':
        if (!scopes.some((scope) => result.scopes.includes(scope))) {
          throw new InternalApiError(403, { detail: `The token "${result.actor}" does not have ${needed}, which this request needs.`, reason: 'missing_scope' }, challenge('internal', 'insufficient_scope', scopes.join(' ')));
        }
        ctx.state.actor = result.actor;
        await next();
    }
  };
}
