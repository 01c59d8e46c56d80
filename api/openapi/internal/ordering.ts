import { HEAD_STATES, MAX_ORDERING_KEYS, orderingStatusQuery } from '../../../application/ordering/ordering-status';
import { zodJsonSchema, zodQueryParameters } from '../zod-json-schema';
import { orderingKeyRequest } from '../../../application/ordering/ordering-operator';
import { ref, json, error, uuid, scoped, postgresOnlyErrors, badBody, operation } from './common';

export const orderingSchemas = {
  OrderingKeyRequest: zodJsonSchema(orderingKeyRequest),
  OrderingDecision: {
    type: 'object',
    additionalProperties: false,
    required: ['key', 'webhook_id', 'decision'],
    properties: { key: { type: 'string' }, webhook_id: uuid, decision: { type: 'string', enum: ['skip', 'retry'] } },
  },
  OrderingStatus: {
    type: 'object',
    additionalProperties: false,
    required: ['keys'],
    properties: {
      keys: {
        type: 'array',
        maxItems: MAX_ORDERING_KEYS,
        items: ref('OrderingKey'),
        description: 'Keys with an unsettled webhook, the longest-waiting first.',
      },
    },
  },
  OrderingKey: {
    type: 'object',
    additionalProperties: false,
    required: ['key', 'head', 'queued', 'oldest_queued_seconds', 'gaps'],
    properties: {
      key: {
        type: ['string', 'null'],
        description:
          'The ordering key; null once an erasure removed it from a lane that still holds webhooks of other ' +
          'subjects, or while no listed key opens it (`key_unreadable`).',
      },
      key_unreadable: {
        type: 'string',
        description:
          'Only when the lane keeps a key that no key of PAYLOAD_ENCRYPTION_KEYS opens (a rotation removed its ' +
          'key before `keys reseal` reached it): why, naming the key id. The next webhook of the key rebuilds it.',
      },
      head: {
        type: 'object',
        additionalProperties: false,
        required: ['webhook_id', 'sequence', 'state', 'attempts'],
        properties: {
          webhook_id: uuid,
          sequence: { type: 'integer', minimum: 1 },
          state: {
            type: 'string',
            enum: [...HEAD_STATES],
            description:
              '`attempting`, `waiting` for a retry, `held` by the partner gate, or `stopped` in Temporal (the ' +
              'ordering sweep settles it).',
          },
          attempts: { type: 'integer', minimum: 0 },
        },
      },
      queued: { type: 'integer', minimum: 0, description: 'Webhooks of the key waiting behind the head.' },
      oldest_queued_seconds: {
        type: ['integer', 'null'],
        minimum: 0,
        description: 'How long the longest-waiting of them has waited.',
      },
      gaps: {
        type: 'integer',
        minimum: 0,
        description: 'Webhooks of the key settled without a delivery: numbers the partner never received.',
      },
    },
  },
};

const decisionOperation = (operationId: string, summary: string, status: string, description: string) => ({
  post: operation(
    ['operate'],
    operationId,
    summary,
    {
      [status]: { description, content: json(ref('OrderingDecision')) },
      ...badBody,
      '404': error('No lane of that key (never used, or erased).'),
      '409': error('The key is not blocked: its head has not failed finally, or nothing of it is unsettled.'),
    },
    { requestBody: { required: true, content: json(ref('OrderingKeyRequest')) } },
  ),
});

export const orderingPaths = {
  '/internal/v1/ordering': {
    get: {
      operationId: 'getOrdering',
      summary:
        'Per-entity ordering: each key with an unsettled webhook, its head, what waits behind it and its gaps ' +
        '(as `partner-service ordering status`)',
      tags: ['internal'],
      ...scoped(['read']),
      parameters: zodQueryParameters(orderingStatusQuery),
      responses: {
        '200': { description: 'The keys.', content: json(ref('OrderingStatus')) },
        '400': error('A bad limit or flag: one error per parameter.'),
        ...postgresOnlyErrors,
      },
    },
  },
  '/internal/v1/ordering/skip': decisionOperation(
    'skipOrderingKey',
    "Skip a blocked key's head: it ends as failed, a gap, and the key goes on (as `partner-service ordering skip KEY`)",
    '200',
    'Skipped.',
  ),
  '/internal/v1/ordering/retry': decisionOperation(
    'retryOrderingKey',
    "Retry a blocked key's head: one more attempt now; blocked again if it fails (as `partner-service ordering " +
      'retry KEY`)',
    '202',
    'The attempt is being made.',
  ),
};
