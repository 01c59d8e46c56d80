import type { Middleware } from 'koa';
import type { OperatorContext } from '../../application/access/audit';
import type { TokenCheck, TokenChecker } from '../../application/access/token-checker';
import { refuse, type AuthFailureState } from '../auth-failures';
import type { RequestIdState } from '../request-id';
import type { TokenScope } from '../../lib/vocabulary';
import { InternalApiError } from '../../lib/errors';

const challenge = (realm: string, error?: string, scope?: string) => ({
  'WWW-Authenticate': `Bearer realm="${realm}"${error ? `, error="${error}"` : ''}${scope ? `, scope="${scope}"` : ''}`,
});
const NO_CREDENTIALS = 'Authentication credentials were not provided.';

/** The actor a request was authenticated as, for the audit trail and Temporal's identity. */
export interface AuthenticatedState extends AuthFailureState {
  actor: string;
  /** The token's scopes: a route may show less to a token without `read` (the status URL). */
  scopes: readonly TokenScope[];
}

/**
 * Who makes a request's change, for the audit trail: its actor (set by requireScope) and its request id
 * (api/request-id.ts).
 */
export function operatorOf(ctx: { state: Partial<AuthenticatedState & RequestIdState> }): OperatorContext {
  if (ctx.state.actor === undefined) throw new Error('operatorOf needs requireScope before it');
  return { actor: ctx.state.actor, requestId: ctx.state.requestId };
}

/**
 * Requires a token (named, or the shared INTERNAL_API_TOKEN) with one of `scopes`: 401 without a token or with
 * an unknown, revoked or expired one; 403 naming the scope when the token lacks it. The route's actor goes to
 * `ctx.state.actor`.
 */
export function requireScope(
  tokens: TokenChecker,
  ...scopes: [TokenScope, ...TokenScope[]]
): Middleware<AuthenticatedState> {
  return requireChecked((authorization) => tokens.check(authorization), 'internal', scopes);
}

/**
 * Answers a token check (`check` of the request's Authorization header, or of what stands for it): 401 and 403
 * with `realm`'s challenge, each refusal noted for the auth-failure count; 503 when named tokens cannot be checked.
 */
export function requireChecked(
  check: (authorization: string, ctx: { params?: Record<string, string> }) => TokenCheck,
  realm: string,
  scopes: readonly [TokenScope, ...TokenScope[]],
): Middleware<AuthenticatedState> {
  const needed =
    scopes.length === 1 ? `the scope "${scopes[0]}"` : `one of the scopes ${scopes.map((s) => `"${s}"`).join(', ')}`;
  return async function requireTokenScope(ctx, next) {
    const result = check(ctx.get('authorization'), ctx as { params?: Record<string, string> });
    switch (result.kind) {
      case 'missing':
        refuse(ctx, 'missing_token');
        throw new InternalApiError(401, { detail: NO_CREDENTIALS }, challenge(realm));
      case 'invalid':
        refuse(ctx, result.reason);
        throw new InternalApiError(401, { detail: result.detail }, challenge(realm, 'invalid_token'));
      case 'unavailable':
        throw new InternalApiError(
          503,
          { detail: result.detail, reason: 'token_store_unavailable' },
          { 'Retry-After': '5' },
        );
      case 'valid':
        if (!scopes.some((scope) => result.scopes.includes(scope))) {
          refuse(ctx, 'missing_scope', result.actor);
          throw new InternalApiError(
            403,
            {
              detail: `The token "${result.actor}" does not have ${needed}, which this request needs.`,
              reason: 'missing_scope',
            },
            challenge(realm, 'insufficient_scope', scopes.join(' ')),
          );
        }
        ctx.state.actor = result.actor;
        ctx.state.scopes = result.scopes;
        await next();
    }
  };
}
