import type { Knex } from 'knex';
import type { RouterMiddleware } from '@koa/router';
import { verifyAppKey } from '../../lib/app-keys';
import { findAppAccess } from './access-query';
import { DETAIL, ListingError } from './errors';
import { refuse, type AuthFailureState } from '../auth-failures';
import type { ListingScope, ListingTarget } from './scope';

export interface ListingState extends AuthFailureState {
  scope: ListingScope;
}

export type TargetOf = (params: Record<string, string>) => ListingTarget;

/**
 * X-App-Id / X-App-Key authentication and per-company permission, in one indexed lookup. Unknown and
 * ungranted targets get the same 403, so a response never tells whether an id exists.
 */
export function requireAppAccess(knex: Knex, targetOf: TargetOf): RouterMiddleware<ListingState> {
  return async function requireAppAccess(ctx, next) {
    const appId = ctx.get('X-App-Id');
    const appKey = ctx.get('X-App-Key');
    if (!appId || !appKey) {
      refuse(ctx, 'missing_token');
      throw new ListingError(403, DETAIL.notAuthenticated);
    }
    const target = targetOf(ctx.params);
    const access = await findAppAccess(knex, appId, target);
    if (!access || !verifyAppKey(appKey, { salt: access.key_salt, hash: access.key_hash })) {
      refuse(ctx, 'invalid_token');
      throw new ListingError(403, DETAIL.authenticationFailed);
    }
    if (!access.scopes.includes('listings')) {
      refuse(ctx, 'missing_scope', appId);
      throw new ListingError(403, DETAIL.missingScope('listings'));
    }
    if (access.granted_company_id === null) {
      // The app is known and its key right: the count and log may say so, the answer does not.
      refuse(ctx, 'not_granted');
      throw new ListingError(403, DETAIL.permissionDenied);
    }
    ctx.state.scope =
      target.kind === 'company' ? target : { kind: 'job', jobId: target.jobId, companyId: access.granted_company_id };
    return next();
  };
}
