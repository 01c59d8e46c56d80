import { TEST_EVENT_PAIRS, testEventRequest } from '../../../application/ingestion/test-event';
import { zodJsonSchema } from '../zod-json-schema';
import { error, json, partnerOperation, ref } from './common';
import { partnerBodyErrors } from './endpoint';

export const testEventSchemas = {
  PartnerTestEventAccepted: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'event_id', 'status_url'],
    properties: {
      webhook_id: { type: 'string', format: 'uuid', description: 'The webhook-id header the POST carries.' },
      event_id: { type: 'string', pattern: '^test-', description: 'Fresh on every call.' },
      status_url: { type: 'string', description: 'GET it for the delivery and its attempts.' },
    },
  },
  PartnerTestEventRequest: zodJsonSchema(testEventRequest),
  PartnerEventTypes: {
    type: 'object',
    additionalProperties: false,
    required: ['event_types'],
    properties: {
      event_types: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['event_type', 'action', 'example'],
          properties: {
            event_type: { type: 'string' },
            action: { type: 'string' },
            example: {
              type: 'object',
              description: "The example's `data`, as the document's `webhooks` describe it; a test event sends it.",
            },
          },
        },
      },
    },
  },
};

export const testEventPaths = {
  '/partner/v1/event-types': {
    get: partnerOperation(
      'deliveries:read',
      'listPartnerEventTypes',
      'The event catalog, with an example of each pair',
      {
        '200': {
          description: `The pairs a test event can send: ${TEST_EVENT_PAIRS.join(', ')}.`,
          content: json(ref('PartnerEventTypes')),
        },
      },
    ),
  },
  '/partner/v1/test-events': {
    post: partnerOperation(
      'deliveries:write',
      'sendPartnerTestEvent',
      "Send the catalog's example of an event to your endpoint, through the normal delivery path",
      {
        '202': {
          description:
            'Accepted: delivered as every webhook is (signature, the cap, ordering, retries), marked as a test.',
          headers: { Location: { schema: { type: 'string' }, description: 'The status URL.' } },
          content: json(ref('PartnerTestEventAccepted')),
        },
        '400': error(
          `Invalid JSON or field; a pair without an example (\`detail\` lists them: ${TEST_EVENT_PAIRS.join(', ')}); ` +
            "or a company_id that is not one of the app's (`detail` lists the app's).",
        ),
        ...partnerBodyErrors,
        '503': {
          ...error('Temporal is unavailable or did not answer in time; `detail` says whether it may have started.'),
          headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds to wait.' } },
        },
      },
      {
        description:
          "The event's data is the example's (examples/events/, the document's `webhooks`) with your company " +
          'in it, and a fresh `test-…` event id.',
        requestBody: { required: true, content: json(ref('PartnerTestEventRequest')) },
      },
    ),
  },
};
