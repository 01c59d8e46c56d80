import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';

export const JSON_BODY_LIMIT = '1mb';

const parseJson = bodyParser({ enableTypes: ['json'], jsonLimit: JSON_BODY_LIMIT, parsedMethods: ['POST'] });

/** Parses a JSON request body into ctx.request.body; wrong media types and bad JSON get 415/413/400, never 5xx. */
export const jsonBody: Middleware = async (ctx, next) => {
  if (!ctx.is('application/json')) {
    ctx.status = 415;
    ctx.body = { detail: `Unsupported media type "${ctx.get('content-type')}" in request: send application/json.` };
    return;
  }
  try {
    await parseJson(ctx, async () => {});
  } catch (error) {
    const status = (error as { status?: number }).status === 413 ? 413 : 400;
    ctx.status = status;
    ctx.body = {
      detail: status === 413 ? `Request body is larger than ${JSON_BODY_LIMIT}.` : `JSON parse error - ${(error as Error).message}`,
    };
    return;
  }
  await next();
};
