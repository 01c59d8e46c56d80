import type { Middleware } from 'koa';
import type { Logger } from '../../../lib/logger';
import { ScimError, scimErrorBody } from './errors';

/** Answers every failure below it in the SCIM error format; unexpected errors are logged and become 500. */
export function scimErrors(logger: Logger): Middleware {
  return async function scimErrors(ctx, next) {
    try {
      await next();
    } catch (error) {
      if (error instanceof ScimError) {
        ctx.set(error.headers);
        ctx.status = error.status;
        ctx.body = scimErrorBody(error.status, error.detail, error.scimType);
        return;
      }
      logger.error({ err: error, method: ctx.method, path: ctx.path }, 'SCIM request failed');
      ctx.status = 500;
      ctx.body = scimErrorBody(500, 'An unexpected error occurred.');
    }
  };
}
