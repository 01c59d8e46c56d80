import type Router from '@koa/router';
import { createRouter } from '../router';
import cors from '@koa/cors';
import type { Middleware } from 'koa';
import type { Payload } from '@temporalio/common';
import type { ApiDependencies } from '../context';
import { AesGcmPayloadCodec, PayloadDecryptionError } from '../../temporal/payload-codec';
import { answerInternalErrors } from '../internal/errors';
import { codecAuth, CODEC_SHARED_TOKEN_WARNING } from './codec-auth';
import { jsonBodyUpTo } from '../internal/json-body';
import { payloadsFromJson, payloadsToJson } from './payloads-json';
import { InternalApiError } from '../../lib/errors';

/** Temporal's payloads may reach 2 MB each, and base64 adds a third. */
export const CODEC_BODY_LIMIT = '8mb';

/** The headers Temporal UI sends to a codec server; Authorization for clients that pass a token. */
export const CODEC_ALLOWED_HEADERS = ['X-Namespace', 'Content-Type', 'Authorization'];

/** The path prefix that carries the token for Temporal UI, which cannot send an Authorization header. */
export const UI_TOKEN_PREFIX = '/codec/ui';

/** The codec endpoint to give Temporal UI: the token travels in the path (see "Payload encryption" in README). */
export const uiCodecEndpoint = (apiUrl: string, token: string): string =>
  `${apiUrl}${UI_TOKEN_PREFIX}/${encodeURIComponent(token)}`;

/**
 * Temporal's remote codec protocol: POST …/encode and …/decode with `{payloads}` in proto3 JSON, so that
 * Temporal UI and `temporal … --codec-endpoint` show decrypted payloads. Mounted whenever PAYLOAD_ENCRYPTION_KEYS
 * is set, so that named tokens of scope `decode` work once the shared CODEC_AUTH_TOKEN is retired. Two forms of a
 * token (named with `decode`, or CODEC_AUTH_TOKEN):
 * - `/codec/{encode,decode}` with `Authorization: Bearer <token>` (CLI, scripts, proxies);
 * - `/codec/ui/<token>/{encode,decode}`, the endpoint given to Temporal UI.
 * CORS answers only the origins in CODEC_CORS_ORIGINS. Nothing here logs a path or a header.
 */
export function codecRouter({ config, logger, tokenChecker }: ApiDependencies): Router {
  const router = createRouter({ prefix: '/codec', sensitive: true });
  if (!config.PAYLOAD_ENCRYPTION_KEYS?.length) return router;
  if (!tokenChecker) throw new Error('the codec server needs a token checker');
  if (config.CODEC_AUTH_TOKEN) logger.warn(CODEC_SHARED_TOKEN_WARNING);
  const codec = new AesGcmPayloadCodec(config.PAYLOAD_ENCRYPTION_KEYS);
  const origins = new Set(config.CODEC_CORS_ORIGINS);
  const allowListedOrigins = cors({
    // '' means no CORS headers at all: a browser on another origin cannot read the answer.
    origin: (ctx) => (origins.has(ctx.get('Origin')) ? ctx.get('Origin') : ''),
    allowMethods: 'POST',
    allowHeaders: CODEC_ALLOWED_HEADERS,
    // Temporal UI may be configured to send cookies (TEMPORAL_CODEC_INCLUDE_CREDENTIALS).
    credentials: true,
  });
  const preflightDone: Middleware = async function preflightDone(ctx) {
    if (ctx.status === 404) ctx.status = 204;
  };
  const { bearer, pathToken } = codecAuth(tokenChecker, config.CODEC_AUTH_TOKEN);
  const answerErrors: Middleware = async function answerCodecErrors(ctx, next) {
    try {
      await answerInternalErrors(ctx, next);
    } catch (error) {
      // Not the app's handler: it logs the path, which may hold the token.
      logger.error({ err: error }, 'codec request failed');
      ctx.status = 500;
      ctx.body = { detail: 'A server error occurred.' };
    }
  };
  const body = jsonBodyUpTo(CODEC_BODY_LIMIT);

  const encode: Middleware = async function codecEncode(ctx) {
    ctx.body = payloadsToJson(await codec.encode(payloadsFromJson(ctx.request.body)));
  };
  const decode: Middleware = async function codecDecode(ctx) {
    const payloads = payloadsFromJson(ctx.request.body);
    const decoded: Payload[] = [];
    const errors: { path: string; message: string }[] = [];
    // One at a time, so the answer names every payload that cannot be decrypted.
    for (const [index, payload] of payloads.entries()) {
      try {
        decoded.push(...(await codec.decode([payload])));
      } catch (error) {
        if (!(error instanceof PayloadDecryptionError)) throw error;
        errors.push({ path: `payloads[${index}]`, message: error.message });
      }
    }
    if (errors.length)
      throw new InternalApiError(400, { detail: `The payloads cannot be decoded: ${errors[0].message}`, errors });
    ctx.body = payloadsToJson(decoded);
  };

  for (const [action, handler] of [
    ['encode', encode],
    ['decode', decode],
  ] as const) {
    router.options([`/${action}`, `/ui/:token/${action}`], allowListedOrigins, preflightDone);
    router.post(`/${action}`, allowListedOrigins, answerErrors, bearer, body, handler);
    router.post(`/ui/:token/${action}`, allowListedOrigins, answerErrors, pathToken, body, handler);
  }
  return router;
}
