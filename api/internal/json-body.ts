import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import { InternalApiError } from './errors';

export const JSON_BODY_LIMIT = '1mb';

const parseJson = bodyParser({ enableTypes: ['json'], jsonLimit: JSON_BODY_LIMIT, parsedMethods: ['POST'] });

/** Parses a JSON request body into ctx.request.body; wrong media types and bad JSON get 415/413/400, never 5xx. */
export const jsonBody: Middleware = async function jsonBody(ctx, next) {
  if (!ctx.is('application/json')) {
    throw new InternalApiError(415, { detail: `Unsupported media type "${ctx.get('content-type')}" in request: send application/json.` });
  }
  try {
    await parseJson(ctx, async () => {});
  } catch (error) {
    if ((error as { status?: number }).status === 413) throw new InternalApiError(413, { detail: `Request body is larger than ${JSON_BODY_LIMIT}.` });
    throw new InternalApiError(400, { detail: `JSON parse error - ${(error as Error).message}` });
  }
  await next();
};
