import { USER_AGENT } from './user-agent';

// The headers of every delivery: sent by the activity and described by the webhook catalog, from one place.

/** Spec 4.1 headers plus Content-Type, User-Agent and the webhook-id/-timestamp pair partners de-duplicate on. */
export function webhookHeaders(
  token: string,
  webhookId: string,
  startedAtMs: number,
  ordering?: { readonly key: string; readonly sequence: number },
): Record<string, string> {
  return {
    // An ordered webhook's key and place in it (docs/partners.md, "Order per entity"): a partner sees a gap.
    ...(ordering && { 'webhook-ordering-key': ordering.key, 'webhook-sequence': String(ordering.sequence) }),
    'accept-encoding': 'gzip, deflate',
    accept: '*/*',
    connection: 'keep-alive',
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(startedAtMs / 1000)),
  };
}
