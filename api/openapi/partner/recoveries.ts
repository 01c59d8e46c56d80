import { FINISHED_STATUSES } from '../../../lib/vocabulary';
import { recoveryBody } from '../../../application/webhooks/recoveries';
import { redeliveryQuery } from '../../../application/webhooks/webhook-filter';
import { zodJsonSchema, zodQueryParameters } from '../zod-json-schema';
import { error, json, partnerOperation, ref } from './common';

// Recovery (deliveries:write): one webhook redelivered; a recovery of a window, its dry run, progress and cancel.

const uuid = { type: 'string', format: 'uuid' };
const count = (description?: string) => ({ type: 'integer', minimum: 0, ...(description && { description }) });
const dateTime = { type: 'string', format: 'date-time' };

const temporalUnavailable = {
  ...error(
    'Temporal is unavailable (`reason` says why): nothing was started, or, when `detail` says so, the outcome is ' +
      'unknown. Has Retry-After.',
  ),
  headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds to wait.' } },
};
const badBody = {
  '400': error('Invalid JSON or field (one error per field), or `until` not later than `since`.'),
  '413': error('Body over 1 MB.'),
  '415': error('Not application/json.'),
};
const notFound = (what: string) => error(`${what} (\`{"detail": "Not found."}\`, the same body either way).`);
const idParameter = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});
const location = (description: string) => ({ Location: { schema: { type: 'string' }, description } });

const recoveryRequestFields = {
  since: dateTime,
  until: dateTime,
  status: { type: 'string', enum: [...FINISHED_STATUSES] },
  event_type: { type: 'string' },
};

export const recoverySchemas = {
  PartnerRedelivery: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'redelivery_of', 'status_url'],
    properties: {
      webhook_id: { ...uuid, description: "The redelivery's own id." },
      redelivery_of: { ...uuid, description: 'The original webhook, whose id every attempt sends as `webhook-id`.' },
      status_url: { type: 'string', description: '`/partner/v1/webhooks/{webhook_id}` of the redelivery.' },
    },
  },
  PartnerRecoveryRequest: zodJsonSchema(recoveryBody),
  PartnerRecoveryDryRun: {
    type: 'object',
    additionalProperties: false,
    required: ['dry_run', 'since', 'until', 'status', 'would_start', 'would_skip', 'webhook_ids', 'skipped'],
    properties: {
      dry_run: { type: 'boolean', enum: [true] },
      ...recoveryRequestFields,
      would_start: count(),
      would_skip: count(),
      webhook_ids: {
        type: 'array',
        items: uuid,
        description: 'The originals a recovery would redeliver now, in the order it starts them.',
      },
      skipped: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['webhook_id', 'reason'],
          properties: {
            webhook_id: uuid,
            reason: {
              type: 'string',
              enum: ['expired_links', 'payload_removed'],
              description:
                "`expired_links`: the event's signed links are past their deadline (a recovery never sends dead " +
                'links; redeliver it alone with allow_expired_links); `payload_removed`: retention or an erasure ' +
                'removed its body.',
            },
          },
        },
      },
    },
  },
  PartnerRecovery: {
    type: 'object',
    additionalProperties: false,
    required: [
      'recovery_id',
      'state',
      'since',
      'until',
      'status',
      'total',
      'started',
      'cancelled',
      'skipped',
      'created_at',
      'finished_at',
      'status_url',
    ],
    properties: {
      recovery_id: uuid,
      state: {
        type: 'string',
        enum: ['running', 'cancelling', 'completed', 'cancelled'],
        description: '`cancelling`: a cancel was asked and the recovery stops at its next group of starts.',
      },
      ...recoveryRequestFields,
      total: count('Originals it redelivers (fixed when it starts).'),
      started: count('Redeliveries started so far.'),
      cancelled: count('Originals a cancel left unstarted.'),
      skipped: {
        type: 'object',
        additionalProperties: false,
        required: ['expired_links', 'payload_removed'],
        properties: {
          expired_links: count(),
          payload_removed: count(),
        },
      },
      delivered: count('Started redeliveries delivered so far (GET only).'),
      failed: count('Started redeliveries that failed finally (GET only).'),
      cancelled_deliveries: count('Started redeliveries cancelled (GET only).'),
      pending: count('Started redeliveries still under way (GET only).'),
      created_at: dateTime,
      finished_at: { oneOf: [dateTime, { type: 'null' }] },
      status_url: { type: 'string' },
    },
  },
  PartnerRecoveryRunning: {
    type: 'object',
    additionalProperties: false,
    required: ['detail', 'running_recovery_id'],
    properties: { detail: { type: 'string' }, running_recovery_id: uuid },
  },
};

const recoveryIdParameter = idParameter('recovery_id', "A recovery's id, from its start's answer.");

export const recoveryPaths = {
  '/partner/v1/webhooks/{webhook_id}/redeliver': {
    parameters: [idParameter('webhook_id', "A webhook of one of the app's companies.")],
    post: partnerOperation(
      'deliveries:write',
      'redeliverPartnerWebhook',
      'Deliver a finished webhook again, with the same webhook-id header',
      {
        '202': {
          description: 'The redelivery started.',
          headers: location("The redelivery's `status_url`."),
          content: json(ref('PartnerRedelivery')),
        },
        '400': error('allow_expired_links is neither true nor false.'),
        '404': notFound("No such webhook, or another company's"),
        '409': error(
          "The delivery has not finished, its body was removed, or the event's signed links are past their " +
            'deadline and allow_expired_links is not true (`detail` names the deadlines).',
        ),
        '503': temporalUnavailable,
      },
      { parameters: zodQueryParameters(redeliveryQuery) },
    ),
  },
  '/partner/v1/recoveries': {
    post: partnerOperation(
      'deliveries:write',
      'startPartnerRecovery',
      "Redeliver every webhook of the app's companies in a window whose latest delivery ended failed",
      {
        '200': {
          description: 'The dry run: what a recovery would start and skip now.',
          content: json(ref('PartnerRecoveryDryRun')),
        },
        '202': {
          description: 'The recovery started: its progress is at `status_url`.',
          headers: location("The recovery's `status_url`."),
          content: json(ref('PartnerRecovery')),
        },
        ...badBody,
        '409': {
          description: 'A recovery of this app is running: `running_recovery_id` names it.',
          content: json(ref('PartnerRecoveryRunning')),
        },
        '503': temporalUnavailable,
      },
      {
        description:
          "The window is the originals' acceptance time, [since, until). Each original is redelivered once, when " +
          'its latest delivery (itself or its newest redelivery) ended with `status` (`failed` by default; any ' +
          'finished status is allowed: `delivered`, `failed`, `cancelled`, `terminated`). One recovery runs per app ' +
          "at once; it goes out under the deployment's cap and, per ordering key, in the original sequence order.",
        requestBody: { required: true, content: json(ref('PartnerRecoveryRequest')) },
      },
    ),
  },
  '/partner/v1/recoveries/{recovery_id}': {
    parameters: [recoveryIdParameter],
    get: partnerOperation('deliveries:write', 'getPartnerRecovery', "A recovery's progress", {
      '200': { description: 'The recovery.', content: json(ref('PartnerRecovery')) },
      '404': notFound("No such recovery, or another app's"),
    }),
    delete: partnerOperation('deliveries:write', 'cancelPartnerRecovery', 'Cancel what a recovery has not started', {
      '200': {
        description:
          'The cancel is recorded (`state` cancelling, then cancelled); an ended recovery is answered as it is. ' +
          'Redeliveries already started go on.',
        content: json(ref('PartnerRecovery')),
      },
      '404': notFound("No such recovery, or another app's"),
      '503': temporalUnavailable,
    }),
  },
};
