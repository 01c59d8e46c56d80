import { request } from 'undici';
import { webhookHeaders } from '../../../events/delivery-headers';
import { envelopeBody, type WebhookEnvelope } from '../../../events/envelope';

/** The same workflow input size as the service's: the envelope travels in the start, not just an id. */
export interface BareDeliveryInput {
  readonly webhookId: string;
  readonly event: WebhookEnvelope;
}

export interface BareActivities {
  postEnvelope(input: BareDeliveryInput): Promise<void>;
}

/** The service's POST without its bookkeeping: the same body and headers; anything but 2XX throws (and is retried). */
export function bareActivities(endpoint: string, token: string): BareActivities {
  return {
    async postEnvelope({ webhookId, event }) {
      const res = await request(endpoint, {
        method: 'POST',
        headers: webhookHeaders(token, webhookId, Date.now()),
        body: envelopeBody(event),
      });
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`the partner answered ${res.statusCode}`);
    },
  };
}
