import { type TokenScope } from '../../../lib/vocabulary';
import { PARTNER_STATES } from '../../../lib/partner-states';
import { limitRequest, pauseRequest } from '../../../application/partner/partner-operator';
import { zodJsonSchema } from '../zod-json-schema';
import { ref, json, dateTime, nullable, scoped, postgresOnlyErrors, badBody } from './common';

export const partnerSchemas = {
  PartnerStatus: {
    type: 'object',
    additionalProperties: false,
    required: [
      'state',
      'reason',
      'since',
      'held',
      'max_per_second',
      'max_per_second_source',
      'partner_max_per_second',
      'rate_in_force',
      'partner_pause',
      'retry_after_until',
      'hold_ceiling_seconds',
      'breaker',
    ],
    properties: {
      state: {
        type: 'string',
        enum: [...PARTNER_STATES],
        description:
          '`paused` by an operator or by the partner (`partner_pause`), `tripped` by the breaker, `throttled` ' +
          'until a Retry-After; `active` otherwise.',
      },
      reason: {
        type: ['string', 'null'],
        description: "The operator's reason while an operator's pause is in force (a partner's: `partner_pause`).",
      },
      since: { ...nullable(dateTime), description: 'When the hold in force began.' },
      held: {
        type: 'integer',
        minimum: 0,
        description: 'Deliveries whose next attempt waits for the hold to end; none of those attempts is spent.',
      },
      max_per_second: { type: 'integer', minimum: 1, description: 'POSTs per second of every worker together.' },
      max_per_second_source: { type: 'string', enum: ['operator', 'configuration'] },
      partner_max_per_second: {
        type: ['integer', 'null'],
        minimum: 1,
        description: "The partner's own rate (PATCH /partner/v1/endpoint), which only ever lowers the cap.",
      },
      rate_in_force: {
        type: 'integer',
        minimum: 1,
        description: 'POSTs per second in force: the lower of max_per_second and partner_max_per_second.',
      },
      partner_pause: {
        oneOf: [
          {
            type: 'object',
            additionalProperties: false,
            required: ['paused_by', 'reason', 'since'],
            properties: {
              paused_by: { type: 'string', description: 'The app that paused, `app:<app_id>`.' },
              reason: { type: 'string' },
              since: dateTime,
            },
          },
          { type: 'null' },
        ],
        description:
          "The partner's own pause (POST /partner/v1/endpoint/pause): it holds deliveries as an operator's does, " +
          "and an operator's resume ends it too.",
      },
      retry_after_until: nullable(dateTime),
      hold_ceiling_seconds: {
        type: 'number',
        description: 'PARTNER_HOLD_CEILING_MS: past this long held, a delivery goes on with its schedule.',
      },
      breaker: {
        type: 'object',
        additionalProperties: false,
        required: ['consecutive_failures', 'failures_to_trip', 'trips', 'tripped_at', 'next_probe_at'],
        properties: {
          consecutive_failures: { type: 'integer', minimum: 0 },
          failures_to_trip: { type: 'integer', minimum: 1 },
          trips: { type: 'integer', minimum: 0 },
          tripped_at: nullable(dateTime),
          next_probe_at: nullable(dateTime),
        },
      },
    },
  },
  PartnerPause: zodJsonSchema(pauseRequest),
  PartnerLimit: zodJsonSchema(limitRequest),
};

/** The partner routes read and write PostgreSQL only: no Temporal outage can reach them. */
const partnerOperation = (
  scope: TokenScope,
  operationId: string,
  summary: string,
  responses: Record<string, object>,
  extra: object = {},
) => ({
  operationId,
  summary,
  tags: ['internal'],
  ...scoped([scope]),
  ...extra,
  responses: {
    '200': { description: 'The partner status after the call.', content: json(ref('PartnerStatus')) },
    ...responses,
    ...postgresOnlyErrors,
  },
});
const partnerBody = (schema: string) => ({
  requestBody: { required: true, content: json(ref(schema)) },
});

export const partnerPaths = {
  '/internal/v1/partner': {
    get: partnerOperation(
      'read',
      'getPartner',
      'The partner gate: state, reason, since when, deliveries held, the cap in force, the breaker',
      {},
    ),
  },
  '/internal/v1/partner/pause': {
    post: partnerOperation(
      'operate',
      'pausePartner',
      'Hold every delivery: webhooks are still accepted, no POST leaves any worker',
      badBody,
      partnerBody('PartnerPause'),
    ),
  },
  '/internal/v1/partner/resume': {
    post: partnerOperation(
      'operate',
      'resumePartner',
      "End a pause, the operator's and the partner's own: held deliveries go out at the cap, oldest first",
      {},
    ),
  },
  '/internal/v1/partner/limit': {
    post: partnerOperation(
      'operate',
      'limitPartner',
      'Set the POSTs per second of every worker together, at run time',
      badBody,
      partnerBody('PartnerLimit'),
    ),
  },
};
