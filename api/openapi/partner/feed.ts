import { consumerRequest, feedQuery } from '../../../application/webhooks/partner-feed';
import { EVENT_ACTIONS, EVENT_TYPES, LOG_STATUSES } from '../../../lib/vocabulary';
import { zodJsonSchema, zodQueryParameters } from '../zod-json-schema';
import { error, json, pagedListOperation, partnerOperation, ref } from './common';
import { partnerBodyErrors } from './endpoint';

// The pull feed and its consumers (`deliveries:read`): api/partner/feed-routes.ts; docs/partners.md, "The feed".

const dateTime = { type: 'string', format: 'date-time' };

export const feedSchemas = {
  PartnerFeedPage: {
    type: 'object',
    additionalProperties: false,
    required: ['next_cursor', 'next', 'results'],
    properties: {
      next_cursor: {
        type: ['string', 'null'],
        description: "Where to go on from: the last item's cursor, or the request's own after an empty page.",
      },
      next: { type: 'string', description: 'This request with `after` set to next_cursor (and no `wait`).' },
      results: { type: 'array', items: ref('PartnerFeedItem') },
    },
  },
  PartnerFeedItem: {
    type: 'object',
    additionalProperties: false,
    required: [
      'id',
      'cursor',
      'event_type',
      'action',
      'company_id',
      'ordering_key',
      'sequence',
      'accepted_at',
      'status',
    ],
    properties: {
      id: { type: 'string', format: 'uuid', description: 'The webhook id (the `webhook-id` header of its POSTs).' },
      cursor: { type: 'string', description: 'Read on after this item with `after=<cursor>`.' },
      event_type: { type: 'string', enum: [...EVENT_TYPES] },
      action: { type: 'string', enum: [...EVENT_ACTIONS] },
      company_id: { type: 'string' },
      ordering_key: { type: ['string', 'null'] },
      sequence: { type: ['integer', 'null'], minimum: 1 },
      accepted_at: dateTime,
      status: { type: 'string', enum: [...LOG_STATUSES], description: 'Its delivery status now.' },
      body: { type: 'object', description: 'The exact JSON every attempt sends; absent once removed.' },
      removed: {
        type: 'string',
        enum: ['retention', 'erasure'],
        description: 'A tombstone: why the body is gone (then `body` is absent).',
      },
    },
  },
  PartnerFeedExpired: {
    type: 'object',
    additionalProperties: false,
    required: ['detail', 'reason', 'oldest_available_at'],
    properties: {
      detail: { type: 'string' },
      reason: { const: 'cursor_expired' },
      oldest_available_at: {
        oneOf: [dateTime, { type: 'null' }],
        description: "When the feed's first event (where a read without `after` starts) was accepted; null: none.",
      },
    },
  },
  PartnerConsumerRequest: zodJsonSchema(consumerRequest),
  PartnerConsumer: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'cursor', 'updated_at'],
    properties: { name: { type: 'string' }, cursor: { type: 'string' }, updated_at: dateTime },
  },
};

const nameParameter = {
  name: 'name',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
  description: "The consumer's name: 1 to 64 letters, digits, dots, underscores or hyphens.",
};

export const feedPaths = {
  '/partner/v1/events': {
    get: (() => {
      const operation = pagedListOperation('deliveries:read', 'listPartnerEvents', "Your companies' events, in order", {
        schema: 'PartnerFeedPage',
        badQuery: 'A bad cursor, limit, wait or filter',
        parameters: zodQueryParameters(feedQuery),
      });
      return {
        ...operation,
        description:
          `${operation.description}\n\nEvery webhook once, in the order its transaction was numbered, to a reader ` +
          'that follows the cursors: a webhook that commits late is never behind a cursor already given out.',
        responses: {
          ...operation.responses,
          '410': {
            description: "`after` is older than the log's retention (WEBHOOK_LOG_RETENTION_DAYS): read from the start.",
            content: json(ref('PartnerFeedExpired')),
          },
        },
      };
    })(),
  },
  '/partner/v1/consumers/{name}': {
    put: partnerOperation(
      'deliveries:read',
      'putPartnerConsumer',
      "Store a consumer's position",
      {
        '200': { description: 'Stored.', content: json(ref('PartnerConsumer')) },
        '400': error('A bad name, JSON or cursor.'),
        ...partnerBodyErrors,
      },
      {
        parameters: [nameParameter],
        requestBody: { required: true, content: json(ref('PartnerConsumerRequest')) },
      },
    ),
    get: partnerOperation(
      'deliveries:read',
      'getPartnerConsumer',
      "A consumer's stored position",
      {
        '200': { description: 'The position.', content: json(ref('PartnerConsumer')) },
        '400': error('A bad name.'),
        '404': error('No position stored under this name.'),
      },
      { parameters: [nameParameter] },
    ),
  },
};
