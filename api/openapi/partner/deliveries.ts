import { EVENT_ACTIONS, EVENT_TYPES, LOG_STATUSES } from '../../../lib/vocabulary';
import { MAX_PARTNER_PAGE, partnerListQuery } from '../../../application/webhooks/partner-deliveries';
import { EXPLANATION_CODES, PARTNER_ERROR_CLASSES } from '../../../application/webhooks/delivery-explanation';
import { zodQueryParameters } from '../zod-json-schema';
import { error, json, pagedListOperation, partnerOperation, ref } from './common';

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
        description: 'Newest first; never a body (GET /partner/v1/webhooks/{webhook_id}/body).',
        items: ref('PartnerWebhookRow'),
      },
    },
  },
  PartnerWebhook: {
    type: 'object',
    additionalProperties: false,
    required: [...Object.keys(webhookFields), 'payload_removed_at', 'attempts', 'next_attempt_at', 'explanation'],
    properties: {
      ...webhookFields,
      payload_removed_at: { ...nullable(dateTime), description: 'When retention or an erasure removed its body.' },
      attempts: { type: 'array', items: ref('PartnerAttempt'), description: 'Every recorded attempt, in order.' },
      next_attempt_at: {
        ...nullable(dateTime),
        description: 'When the next attempt goes, while one is scheduled (null when Temporal did not answer).',
      },
      explanation: ref('PartnerExplanation'),
    },
  },
  PartnerAttempt: {
    type: 'object',
    additionalProperties: false,
    required: ['number', 'started_at', 'duration_ms', 'http_status', 'error_class', 'response_excerpt'],
    properties: {
      number: { type: 'integer', minimum: 1 },
      started_at: dateTime,
      duration_ms: { type: 'integer', minimum: 0, description: "Until your endpoint's answer (or the error)." },
      http_status: { type: ['integer', 'null'], description: "Your endpoint's status code; null without an answer." },
      error_class: {
        oneOf: [{ type: 'string', enum: [...PARTNER_ERROR_CLASSES] }, { type: 'null' }],
        description:
          'Null when it succeeded. `http`: your endpoint answered with a status that is not a success; `dns`, ' +
          '`connect` (connection refused), `tls`, `timeout` (no answer within the timeout), `reset` (connection ' +
          'reset), `other`: no answer.',
      },
      response_excerpt: {
        type: ['string', 'null'],
        description: "The start of your endpoint's answer body; null without one or once removed.",
      },
    },
  },
  PartnerExplanation: {
    type: 'object',
    additionalProperties: false,
    required: ['code', 'text'],
    description: 'Why the webhook is where it is (docs/partners.md, "Explanation codes").',
    properties: {
      code: { type: 'string', enum: [...EXPLANATION_CODES] },
      text: { type: 'string', description: 'The same in words, with the times and ids it involves.' },
    },
  },
  PartnerWebhookRow: {
    type: 'object',
    additionalProperties: false,
    required: [...Object.keys(webhookFields), 'attempts'],
    properties: { ...webhookFields, attempts: { type: 'integer', minimum: 0, description: 'Attempts recorded.' } },
  },
};

const webhookIdParameter = {
  name: 'webhook_id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: "The webhook's id. Anything else, an unknown id and another company's webhook all answer 404.",
};
const notFound = error('No such webhook among your companies\' (always `{"detail": "Not found."}`).');

/** The list's page, its query and its 400. */
const LIST = {
  schema: 'PartnerWebhookPage',
  badQuery: 'A bad filter, limit or cursor, or `until` not later than `since`',
  parameters: zodQueryParameters(partnerListQuery),
};

export const deliveryPaths = {
  '/partner/v1/webhooks': {
    get: pagedListOperation('deliveries:read', 'listPartnerWebhooks', "Your companies' webhooks, newest first", LIST),
  },
  '/partner/v1/webhooks/{webhook_id}': {
    get: partnerOperation(
      'deliveries:read',
      'getPartnerWebhook',
      'One webhook: its attempts and why it is where it is',
      { '200': { description: 'The webhook.', content: json(ref('PartnerWebhook')) }, '404': notFound },
      { parameters: [webhookIdParameter] },
    ),
  },
  '/partner/v1/webhooks/{webhook_id}/body': {
    get: partnerOperation(
      'deliveries:read',
      'getPartnerWebhookBody',
      'The exact bytes each attempt sends',
      {
        '200': {
          description: 'The body, byte for byte as POSTed (verify its signature with your secret).',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
        '404': notFound,
        '410': error(
          'Retention (`reason` payload_removed) or an erasure (`reason` erased) removed the body; `detail` says when.',
        ),
      },
      { parameters: [webhookIdParameter] },
    ),
  },
};
