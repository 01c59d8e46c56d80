import { createHmac } from 'node:crypto';

/**
 * The Standard Webhooks `webhook-signature` header: `v1,<base64 HMAC-SHA256>` over
 * `{webhook-id}.{webhook-timestamp}.{body}`, one entry per secret, so a partner that knows either secret of a
 * rotation accepts the request.
 */
export function webhookSignature(
  secrets: readonly Buffer[],
  webhookId: string,
  timestamp: string,
  body: string,
): string {
  const signed = `${webhookId}.${timestamp}.${body}`;
  return secrets.map((secret) => `v1,${createHmac('sha256', secret).update(signed).digest('base64')}`).join(' ');
}
