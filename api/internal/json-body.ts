import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import { InternalApiError } from '../../lib/errors';

export const JSON_BODY_LIMIT = '1mb';

/**
 * Parses a JSON request body of a POST, PUT or PATCH (up to `limit`) into ctx.request.body; wrong media types and bad
 * JSON get 415/413/400, never 5xx.
 */
export function jsonBodyUpTo(limit: string): Middleware {
  const parseJson = bodyParser({ enableTypes: ['json'], jsonLimit: limit, parsedMethods: ['POST', 'PUT', 'PATCH'] });
  return async function jsonBody(ctx, next) {
    if (!ctx.is('application/json')) {
      throw new InternalApiError(415, {
        detail: `Unsupported media type "${ctx.get('content-type')}" in request: send application/json.`,
      });
    }
    try {
      await parseJson(ctx, async () => {});
    } catch (error) {
      if ((error as { status?: number }).status === 413)
        throw new InternalApiError(413, { detail: `Request body is larger than ${limit}.` });
      throw new InternalApiError(400, { detail: `JSON parse error - ${(error as Error).message}` });
    }
    await next();
  };
}

/** The internal API's JSON bodies, up to JSON_BODY_LIMIT. */
export const jsonBody: Middleware = jsonBodyUpTo(JSON_BODY_LIMIT);
