import http from 'node:http';
import Koa, { type Context } from 'koa';
import { createRouter } from '../router';
import { z } from 'zod';
import type { Logger } from '../../lib/logger';
import { checkAuthorization, checkSignature, maskAuthorization } from './checks';
import { DeliveryRing, type InboxDelivery } from './delivery-ring';
import { inboxPage, PAGE_CONTENT_SECURITY_POLICY } from './page';

export interface PartnerInboxOptions {
  /** The Bearer token the worker sends (PARTNER_ACCESS_TOKEN). */
  readonly token: string;
  /** The worker's signing secrets (PARTNER_SIGNING_SECRETS); none: every signed request shows as invalid. */
  readonly signingSecrets: readonly Buffer[];
  readonly logger: Logger;
  readonly deliveries?: DeliveryRing;
}

/** Far above any envelope the internal API accepts (1 MB of JSON); beyond it the inbox answers 413. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Names under which a browser on this machine reaches a loopback server. */
const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Only event_type and action are read from the body, for the page's headings; the rest is shown as received. */
const envelopeSummary = z.object({ event_type: z.string(), action: z.string() });

function summarise(body: string): z.infer<typeof envelopeSummary> | undefined {
  try {
    const parsed = envelopeSummary.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The raw body up to `limit` bytes (the signature covers the exact bytes), or undefined when it is larger. */
async function readRawBody(req: http.IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const header = (ctx: Context, name: string): string | undefined => {
  const value = ctx.req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

function shownHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => {
      const text = Array.isArray(value) ? value.join(', ') : (value ?? '');
      return [name, name === 'authorization' ? maskAuthorization(text) : text];
    }),
  );
}

/**
 * The partner inbox: `POST /webhooks` answers 204 to every request and records it with its checks, `GET /`
 * shows the last deliveries as a page and `GET /deliveries` as JSON. Other methods on these paths get 405.
 */
export function createPartnerInboxApp({
  token,
  signingSecrets,
  logger,
  deliveries = new DeliveryRing(),
}: PartnerInboxOptions): Koa {
  const app = new Koa();
  app.silent = true;
  app.on('error', (error: unknown) => logger.warn({ err: error }, 'partner inbox request failed'));
  // Bound to loopback, and answering only loopback names too: a web page cannot rebind its own host name to
  // 127.0.0.1 and read the deliveries.
  app.use(async function loopbackHostOnly(ctx, next) {
    if (!LOOPBACK_HOSTNAMES.has(ctx.hostname)) {
      ctx.status = 403;
      ctx.body = 'The partner inbox answers only on 127.0.0.1 or localhost.\n';
      return;
    }
    await next();
  });

  const router = createRouter();
  router.post('/webhooks', async function receiveWebhook(ctx) {
    const body =
      Number(ctx.get('content-length') || 0) > MAX_BODY_BYTES ? undefined : await readRawBody(ctx.req, MAX_BODY_BYTES);
    if (body === undefined) {
      ctx.status = 413;
      return;
    }
    const webhookId = header(ctx, 'webhook-id');
    const timestamp = header(ctx, 'webhook-timestamp');
    const summary = summarise(body);
    const delivery: InboxDelivery = {
      received_at: new Date().toISOString(),
      webhook_id: webhookId ?? null,
      webhook_timestamp: timestamp ?? null,
      event_type: summary?.event_type ?? null,
      action: summary?.action ?? null,
      headers: shownHeaders(ctx.req.headers),
      body,
      checks: {
        authorization: checkAuthorization(header(ctx, 'authorization'), token),
        signature: checkSignature(
          signingSecrets,
          { webhookId, timestamp, signature: header(ctx, 'webhook-signature') },
          body,
        ),
      },
    };
    deliveries.add(delivery);
    logger.info(
      {
        webhookId: delivery.webhook_id,
        eventType: delivery.event_type,
        action: delivery.action,
        authorizationCheck: delivery.checks.authorization,
        signatureCheck: delivery.checks.signature,
      },
      'partner inbox received a webhook',
    );
    ctx.status = 204;
  });
  router.get('/', function inbox(ctx) {
    ctx.set('Content-Security-Policy', PAGE_CONTENT_SECURITY_POLICY);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = inboxPage(deliveries.list());
  });
  router.get('/deliveries', function deliveryList(ctx) {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { deliveries: deliveries.list() };
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
