import type { Middleware } from 'koa';
import { ingestRefusals } from '../../lib/metrics';
import { ServiceError } from '../../lib/errors';

/**
 * Counts the ingestion's 503s by their reason (partner_service_ingest_refusals_total); the answer is left to
 * answerInternalErrors.
 */
export const countIngestRefusals: Middleware = async function countIngestRefusals(_ctx, next) {
  try {
    await next();
  } catch (error) {
    const reason = error instanceof ServiceError ? error.ingestRefusal() : undefined;
    if (reason) ingestRefusals.inc({ reason });
    throw error;
  }
};

/**
 * Turns every expected failure below it into its own status, headers and body (lib/errors.ts); anything else goes on to
 * the app's 500.
 */
export const answerInternalErrors: Middleware = async function answerInternalErrors(ctx, next) {
  try {
    await next();
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    ctx.set(error.apiHeaders());
    ctx.status = error.httpStatus;
    ctx.body = error.apiBody();
  }
};
