import { PARTNER_STATES } from '../../../lib/partner-states';
import { endpointLimitRequest } from '../../../application/partner/partner-endpoint';
import { pauseRequest } from '../../../application/partner/partner-operator';
import { zodJsonSchema } from '../zod-json-schema';
import { error, json, partnerOperation, ref } from './common';

const dateTime = { type: 'string', format: 'date-time' };
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });

/** The answers of a route with a JSON body (api/internal/json-body.ts). */
export const partnerBodyErrors = {
  '413': error('Body over 1 MB.'),
  '415': error('Not application/json.'),
};

export const endpointSchemas = {
  PartnerEndpoint: {
    type: 'object',
    additionalProperties: false,
    required: [
      'state',
      'since',
      'pauses',
      'max_per_second',
      'deployment_max_per_second',
      'rate_in_force',
      'retry_after_until',
      'breaker',
      'held',
      'signing_secrets',
    ],
    properties: {
      state: {
        type: 'string',
        enum: [...PARTNER_STATES],
        description:
          '`paused` by you or an operator, `tripped` by the breaker, `throttled` until your own Retry-After; ' +
          '`active` otherwise: deliveries go out at `rate_in_force`.',
      },
      since: { ...nullable(dateTime), description: 'When the hold in force began; null while active.' },
      pauses: {
        type: 'array',
        maxItems: 2,
        description:
          "The pauses in force, an operator's first. While an operator's is in force only the operator's resume " +
          'ends the hold (and yours with it).',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['paused_by', 'reason', 'since'],
          properties: {
            paused_by: {
              type: 'string',
              pattern: '^(operator|app:.+)$',
              description: '`operator`, or `app:<app_id>`: the app that paused.',
            },
            reason: { type: 'string' },
            since: dateTime,
          },
        },
      },
      max_per_second: {
        type: ['integer', 'null'],
        minimum: 1,
        description: "Your own rate (PATCH); null: the deployment's cap.",
      },
      deployment_max_per_second: {
        type: 'integer',
        minimum: 1,
        description: "The deployment's cap: the operator's run-time cap, else PARTNER_MAX_PER_SECOND.",
      },
      rate_in_force: {
        type: 'integer',
        minimum: 1,
        description: 'POSTs per second of every worker together: the lower of the two above.',
      },
      retry_after_until: {
        ...nullable(dateTime),
        description: 'While `throttled`: until when your Retry-After holds deliveries.',
      },
      breaker: {
        type: 'object',
        additionalProperties: false,
        required: ['state', 'consecutive_failures', 'failures_to_trip', 'next_probe_at'],
        properties: {
          state: {
            type: 'string',
            enum: ['closed', 'open'],
            description: '`open`: failing answers in a row tripped it; deliveries are held until a probe is answered.',
          },
          consecutive_failures: { type: 'integer', minimum: 0 },
          failures_to_trip: { type: 'integer', minimum: 1 },
          next_probe_at: { ...nullable(dateTime), description: 'While open: when the next probe goes out.' },
        },
      },
      held: {
        type: 'integer',
        minimum: 0,
        description: 'Deliveries waiting for the hold to end; none of their attempts is spent.',
      },
      signing_secrets: {
        type: 'array',
        description: 'The live signing secrets, never their values.',
        items: ref('PartnerSigningSecretSummary'),
      },
    },
  },
  PartnerSigningSecretSummary: {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'created_at', 'expires_at', 'last_used_at', 'source'],
    properties: {
      id: { type: 'string', description: '`config-<n>` for a secret of the configuration.' },
      created_at: nullable(dateTime),
      expires_at: nullable(dateTime),
      last_used_at: nullable(dateTime),
      source: {
        type: 'string',
        enum: ['api', 'configuration'],
        description: '`configuration`: PARTNER_SIGNING_SECRETS, which the API cannot delete.',
      },
    },
  },
  PartnerEndpointPause: zodJsonSchema(pauseRequest),
  PartnerEndpointLimit: zodJsonSchema(endpointLimitRequest),
};

const endpointAnswer = (description: string) => ({ description, content: json(ref('PartnerEndpoint')) });
const body = (schema: string) => ({ requestBody: { required: true, content: json(ref(schema)) } });

export const endpointPaths = {
  '/partner/v1/endpoint': {
    get: partnerOperation(
      'endpoint:manage',
      'getPartnerEndpoint',
      'Your endpoint: state, who paused and why, your rate and the cap, the breaker, held deliveries, secrets',
      { '200': endpointAnswer('The endpoint.') },
    ),
    patch: partnerOperation(
      'endpoint:manage',
      'limitPartnerEndpoint',
      "Set your own rate, at most the deployment's cap; null for the cap",
      {
        '200': endpointAnswer('The endpoint, with the rate in force at once on every worker.'),
        '400': error(
          "Invalid JSON or field, or (`errors` on max_per_second) a rate above the deployment's cap, which " +
            '`detail` names.',
        ),
        ...partnerBodyErrors,
      },
      body('PartnerEndpointLimit'),
    ),
  },
  '/partner/v1/endpoint/pause': {
    post: partnerOperation(
      'endpoint:manage',
      'pausePartnerEndpoint',
      'Hold every delivery: nothing is dropped, no attempt is spent',
      {
        '200': endpointAnswer(
          'The endpoint, paused. Pausing again changes nothing: the first pause keeps its time and reason.',
        ),
        '400': error('Invalid JSON or field: one error per field.'),
        ...partnerBodyErrors,
      },
      body('PartnerEndpointPause'),
    ),
  },
  '/partner/v1/endpoint/resume': {
    post: partnerOperation(
      'endpoint:manage',
      'resumePartnerEndpoint',
      'End your pause: held deliveries go out at the rate in force, oldest first',
      {
        '200': endpointAnswer('The endpoint; resuming an endpoint you did not pause changes nothing.'),
        '409': error(
          "An operator's pause is in force (`reason` paused_by_operator, `detail` quotes the operator's reason): " +
            "nothing changed; the operator's resume ends both pauses.",
        ),
      },
    ),
  },
};
