import { EVENT_ACTIONS, EVENT_TYPES, LOG_STATUSES } from '../../../lib/vocabulary';
import { MAX_PARTNER_PAGE, partnerListQuery } from '../../../application/webhooks/partner-deliveries';
import { zodQueryParameters } from '../zod-json-schema';
import { error, json, partnerOperation, ref } from './common';

// The partner's deliveries (`deliveries:read`): api/partner/deliveries-routes.ts.

const dateTime = { type: 'string', format: 'date-time' };
const uuid = { type: 'string', format: 'uuid' };
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
const link = (description: string) => ({ type: ['string', 'null'], description });

/** The fields a webhook shows in the list and in its own view. */
const webhookFields = {
  id: uuid,
  event_id: { type: 'string' },
  event_type: { type: 'string', enum: [...EVENT_TYPES] },
  action: { type: 'string', enum: [...EVENT_ACTIONS] },
  company_id: { type: ['string', 'null'] },
  status: {
    type: 'string',
    enum: [...LOG_STATUSES],
    description: '`held`: waits for the gate to open; `waiting`: an attempt failed and the next is due.',
  },
  ordering_key: {
    type: ['string', 'null'],
    description: 'The entity whose webhooks go in order; null when unordered or once an erasure cleared it.',
  },
  sequence: { type: ['integer', 'null'], minimum: 1, description: "Its place in its ordering key's sequence." },
  accepted_at: dateTime,
  finished_at: nullable(dateTime),
  is_test: { type: 'boolean' },
  redelivery_of: nullable(uuid),
};

export const deliverySchemas = {
  PartnerWebhookPage: {
    type: 'object',
    additionalProperties: false,
    required: ['next', 'previous', 'results'],
    properties: {
      next: link('The page of older webhooks (keyset cursor), or null on the oldest page.'),
      previous: link('The page of newer webhooks, or null on the newest page.'),
      results: {
        type: 'array',
        maxItems: MAX_PARTNER_PAGE,
        description: 'Newest first; never a body (GET /partner/v1/webhooks/{id}/body).',
        items: ref('PartnerWebhookRow'),
      },
    },
  },
  PartnerWebhookRow: {
    type: 'object',
    additionalProperties: false,
    required: [...Object.keys(webhookFields), 'attempts'],
    properties: { ...webhookFields, attempts: { type: 'integer', minimum: 0, description: 'Attempts recorded.' } },
  },
};

export const deliveryPaths = {
  '/partner/v1/webhooks': {
    get: partnerOperation(
      'deliveries:read',
      'listPartnerWebhooks',
      "Your companies' webhooks, newest first",
      {
        '200': { description: 'One page.', content: json(ref('PartnerWebhookPage')) },
        '400': error('A bad filter, limit or cursor, or `until` not later than `since`: one error per parameter.'),
      },
      { parameters: zodQueryParameters(partnerListQuery) },
    ),
  },
};
