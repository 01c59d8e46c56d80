import type { Context, Middleware } from 'koa';
import type { Logger } from '../../../lib/logger';
import { ScimError, scimErrorBody } from './errors';
import { negotiatedMediaType } from './media-type';

/**
 * Makes every response below it SCIM JSON: a failure becomes a SCIM error body (unexpected ones are logged
 * and become 500), and any body gets the negotiated media type. One layer, as it runs on every request.
 */
export function scimResponses(logger: Logger): Middleware {
  return async function scimResponses(ctx, next) {
    try {
      await next();
    } catch (error) {
      answerFailure(ctx, error, logger);
    }
    if (ctx.body !== undefined && ctx.body !== null) ctx.type = negotiatedMediaType(ctx.get('accept'));
  };
}

function answerFailure(ctx: Context, error: unknown, logger: Logger): void {
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
