import { PARTNER_STATES } from '../../../lib/partner-states';
import { json, partnerOperation, ref } from './common';

// The partner's health (`deliveries:read`): api/partner/health-routes.ts; what each figure counts is in
// docs/partners.md, "Health".

const dateTime = { type: 'string', format: 'date-time' };
const nullableDateTime = { oneOf: [dateTime, { type: 'null' }] };
const count = (description: string) => ({ type: 'integer', minimum: 0, description });
const milliseconds = (description: string) => ({ type: ['integer', 'null'], minimum: 0, description });

export const healthSchemas = {
  PartnerHealth: {
    type: 'object',
    additionalProperties: false,
    required: ['last_hour', 'last_24_hours', 'hourly', 'backlog', 'gate', 'breaker'],
    properties: {
      last_hour: ref('PartnerHealthWindow'),
      last_24_hours: ref('PartnerHealthWindow'),
      hourly: {
        type: 'array',
        minItems: 24,
        maxItems: 24,
        description: 'Each of the last 24 clock hours, oldest first; the last is the hour under way.',
        items: ref('PartnerHealthHour'),
      },
      backlog: {
        type: 'object',
        additionalProperties: false,
        required: ['pending', 'queued', 'held', 'oldest_pending_age_seconds'],
        properties: {
          pending: count('Webhooks of your companies not finished yet.'),
          queued: count('Of those, queued behind an earlier unsettled webhook of their ordering key.'),
          held: count('Of those, held by the gate (pause, breaker, Retry-After), no attempt spent.'),
          oldest_pending_age_seconds: {
            type: ['integer', 'null'],
            minimum: 0,
            description: 'Since the oldest pending webhook was accepted; null without one.',
          },
        },
      },
      gate: {
        type: 'object',
        additionalProperties: false,
        required: ['state', 'paused_by', 'since', 'retry_after_until', 'max_per_second'],
        properties: {
          state: { type: 'string', enum: [...PARTNER_STATES] },
          paused_by: { type: ['string', 'null'], enum: ['operator', 'partner', null] },
          since: { ...nullableDateTime, description: 'When the hold in force began; null while active.' },
          retry_after_until: nullableDateTime,
          max_per_second: { type: 'integer', minimum: 1, description: 'The cap deliveries go out at.' },
        },
      },
      breaker: {
        type: 'object',
        additionalProperties: false,
        required: ['consecutive_failures', 'failures_to_trip', 'trips', 'tripped_at', 'next_probe_at'],
        properties: {
          consecutive_failures: count('Failing answers in a row now.'),
          failures_to_trip: { type: 'integer', minimum: 1 },
          trips: count('Times it opened.'),
          tripped_at: nullableDateTime,
          next_probe_at: nullableDateTime,
        },
      },
    },
  },
  PartnerHealthHour: {
    type: 'object',
    additionalProperties: false,
    required: ['hour', 'attempts', 'delivered', 'failed', 'success_rate', 'answer_ms_p50', 'answer_ms_p95'],
    properties: {
      hour: { ...dateTime, description: "The hour's start." },
      attempts: count('Attempts started in the hour.'),
      delivered: count('Of those, the attempts that succeeded.'),
      failed: count('Of those, the attempts that did not.'),
      success_rate: { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'delivered / attempts.' },
      answer_ms_p50: milliseconds('Median answer time (ms) of the answered attempts; null without.'),
      answer_ms_p95: milliseconds('95th percentile of the same.'),
    },
  },
  PartnerHealthWindow: {
    type: 'object',
    additionalProperties: false,
    required: ['attempts', 'delivered', 'failed', 'webhooks_failed', 'success_rate', 'answer_ms_p50', 'answer_ms_p95'],
    properties: {
      attempts: count("Attempts started in the window, to your companies' webhooks."),
      delivered: count('Of those, the attempts that succeeded (each one webhook delivered).'),
      failed: count('Of those, the attempts that did not (an answer that was not a success, or none).'),
      webhooks_failed: count('Webhooks that failed finally (no attempt left) in the window.'),
      success_rate: {
        type: ['number', 'null'],
        minimum: 0,
        maximum: 1,
        description: 'delivered / attempts, to 4 decimals; null without an attempt.',
      },
      answer_ms_p50: milliseconds('Median answer time (ms) of the attempts your endpoint answered; null without.'),
      answer_ms_p95: milliseconds('95th percentile of the same (the nearest rank, an observed value).'),
    },
  },
};

export const healthPaths = {
  '/partner/v1/health': {
    get: partnerOperation('deliveries:read', 'getPartnerHealth', "Your deliveries' health, the gate and the breaker", {
      '200': { description: 'The figures, read from the rows now.', content: json(ref('PartnerHealth')) },
    }),
  },
};
