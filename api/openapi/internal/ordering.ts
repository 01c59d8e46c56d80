import { HEAD_STATES, MAX_ORDERING_KEYS, orderingStatusQuery } from '../../../application/ordering/ordering-status';
import { zodQueryParameters } from '../zod-json-schema';
import { ref, json, error, uuid, scoped, postgresOnlyErrors } from './common';

export const orderingSchemas = {
  OrderingStatus: {
    type: 'object',
    additionalProperties: false,
    required: ['keys'],
    properties: {
      keys: { type: 'array', maxItems: MAX_ORDERING_KEYS, items: ref('OrderingKey'), description: 'Keys with an unsettled webhook, the longest-waiting first.' },
    },
  },
  OrderingKey: {
    type: 'object',
    additionalProperties: false,
    required: ['key', 'head', 'queued', 'oldest_queued_seconds', 'gaps'],
    properties: {
      key: { type: ['string', 'null'], description: 'The ordering key; null once an erasure removed it from a lane that still holds webhooks of other subjects.' },
      head: {
        type: 'object',
        additionalProperties: false,
        required: ['webhook_id', 'sequence', 'state', 'attempts'],
        properties: {
          webhook_id: uuid,
          sequence: { type: 'integer', minimum: 1 },
          state: { type: 'string', enum: [...HEAD_STATES], description: '`attempting`, `waiting` for a retry, `held` by the partner gate, or `stopped` in Temporal (the ordering sweep settles it).' },
          attempts: { type: 'integer', minimum: 0 },
        },
      },
      queued: { type: 'integer', minimum: 0, description: 'Webhooks of the key waiting behind the head.' },
      oldest_queued_seconds: { type: ['integer', 'null'], minimum: 0, description: 'How long the longest-waiting of them has waited.' },
      gaps: { type: 'integer', minimum: 0, description: 'Webhooks of the key settled without a delivery: numbers the partner never received.' },
    },
  },
};

export const orderingPaths = {
  '/internal/v1/ordering': {
    get: {
      operationId: 'getOrdering',
      summary: 'Per-entity ordering: each key with an unsettled webhook, its head, what waits behind it and its gaps (as `partner-service ordering status`)',
      tags: ['internal'],
      ...scoped(['read']),
      parameters: zodQueryParameters(orderingStatusQuery),
      responses: {
        '200': { description: 'The keys.', content: json(ref('OrderingStatus')) },
        '400': error('A bad limit: one error per parameter.'),
        ...postgresOnlyErrors,
      },
    },
  },
};
