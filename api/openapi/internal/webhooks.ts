import {
  ATTEMPT_ERROR_CLASSES,
  ATTEMPT_TRIGGERS,
  EVENT_ACTIONS,
  EVENT_TYPES,
  INGEST_REFUSAL_REASONS,
  LOG_STATUSES,
  SIGNED_LINK_KINDS,
  WEBHOOK_STATUSES,
} from '../../../lib/vocabulary';
import {
  bulkRedeliveryBody,
  listQuery,
  MAX_LOG_PAGE,
  redeliveryQuery,
} from '../../../application/webhooks/webhook-filter';
import { zodJsonSchema, zodQueryParameters } from '../zod-json-schema';
import {
  ref,
  json,
  error,
  dateTime,
  nullable,
  uuid,
  keysetPage,
  UNTIL_AFTER_SINCE,
  operation,
  getOne,
  TOKEN_STORE_UNAVAILABLE,
} from './common';

const expiredLinks = (description: string) => ({
  type: 'array',
  uniqueItems: true,
  items: { type: 'string', enum: [...SIGNED_LINK_KINDS] },
  description,
});

const webhookIdParameter = {
  name: 'webhook_id',
  in: 'path',
  required: true,
  schema: uuid,
  description: 'The webhook id (any other value answers 404).',
};

/** The status URL's payload fields: `ingest` alone may follow a delivery, not read the candidate's data it carries. */
const NEEDS_READ = 'Absent (not null) when the token does not have the scope `read` (a token with `ingest` alone).';

export const webhookResourceSchemas = {
  IngestRefusal: {
    type: 'object',
    required: ['detail', 'reason'],
    additionalProperties: false,
    properties: {
      detail: { type: 'string' },
      reason: { type: 'string', enum: [...INGEST_REFUSAL_REASONS, 'token_store_unavailable'] },
    },
  },
  AcceptedWebhook: {
    type: 'object',
    required: ['webhook_id', 'event_id', 'workflow_id', 'run_id', 'status_url'],
    additionalProperties: false,
    properties: {
      webhook_id: uuid,
      event_id: { type: 'string' },
      workflow_id: { type: 'string' },
      run_id: { type: 'string' },
      status_url: { type: 'string' },
    },
  },
  Attempt: {
    type: 'object',
    additionalProperties: false,
    required: [
      'attempt',
      'trigger',
      'scheduled_at',
      'started_at',
      'duration_ms',
      'http_status',
      'error_class',
      'error_message',
      'succeeded',
      'expired_links',
      'recorded_at',
    ],
    properties: {
      attempt: { type: 'integer', minimum: 1, maximum: 4 },
      trigger: {
        type: 'string',
        enum: [...ATTEMPT_TRIGGERS],
        description: '`manual` for an attempt made by retry-now.',
      },
      scheduled_at: dateTime,
      started_at: dateTime,
      duration_ms: { type: 'integer', minimum: 0 },
      http_status: { type: ['integer', 'null'] },
      error_class: { enum: [...ATTEMPT_ERROR_CLASSES, null] },
      error_message: { type: ['string', 'null'] },
      response_body: {
        type: ['string', 'null'],
        description: `The first 4 KiB of the answer; null once removed (payload_removed_at). ${NEEDS_READ}`,
      },
      succeeded: { type: 'boolean' },
      expired_links: expiredLinks(
        'The kinds of signed link in the event that were past their deadline when this attempt was sent.',
      ),
      recorded_at: dateTime,
    },
  },
  WebhookDetail: {
    type: 'object',
    additionalProperties: false,
    required: [
      'webhook_id',
      'event_id',
      'event_type',
      'action',
      'company_id',
      'workflow_id',
      'run_id',
      'status',
      'redelivery_of',
      'is_test',
      'accepted_at',
      'created_at',
      'updated_at',
      'finished_at',
      'held_since',
      'status_reason',
      'payload_removed_at',
      'payload_removed_reason',
      'attempts',
      'live',
      'signed_links',
    ],
    properties: {
      webhook_id: uuid,
      event_id: { type: 'string' },
      event_type: { type: 'string', enum: [...EVENT_TYPES] },
      action: { type: 'string', enum: [...EVENT_ACTIONS] },
      company_id: { type: ['string', 'null'] },
      workflow_id: { type: ['string', 'null'] },
      run_id: { type: ['string', 'null'] },
      status: { type: 'string', enum: [...WEBHOOK_STATUSES, 'not_started'] },
      redelivery_of: nullable(uuid),
      is_test: { type: 'boolean' },
      accepted_at: {
        ...dateTime,
        description:
          'When the service accepted the event (a redelivery: its original); signed links are dated from it.',
      },
      created_at: dateTime,
      updated_at: dateTime,
      finished_at: nullable(dateTime),
      held_since: {
        ...nullable(dateTime),
        description:
          'Set while the next attempt waits for the partner gate to open (pause, breaker, Retry-After); that ' +
          'attempt is not spent.',
      },
      status_reason: {
        type: ['string', 'null'],
        enum: ['erasure', null],
        description: '`erasure`: an erasure request cancelled this delivery before it was sent.',
      },
      payload_removed_at: {
        ...nullable(dateTime),
        description:
          'When the body and the response excerpts were removed (by the retention purge or an erasure); the ' +
          'delivery log keeps the rest.',
      },
      payload_removed_reason: { type: ['string', 'null'], enum: ['retention', 'erasure', null] },
      event: {
        type: ['object', 'null'],
        description: `The exact body every attempt sends; null once it was removed (payload_removed_at). ${NEEDS_READ}`,
      },
      attempts: { type: 'array', items: ref('Attempt') },
      live: {
        description:
          "Null once the status is final. Otherwise the workflow's own state, or (source database) why Temporal " +
          'did not answer.',
        oneOf: [
          { type: 'null' },
          {
            type: 'object',
            additionalProperties: false,
            required: ['source', 'state', 'next_attempt_at'],
            properties: {
              source: { const: 'temporal' },
              state: { type: 'string' },
              next_attempt_at: nullable(dateTime),
            },
          },
          {
            type: 'object',
            additionalProperties: false,
            required: ['source', 'reason'],
            properties: { source: { const: 'database' }, reason: { type: 'string' } },
          },
        ],
      },
      signed_links: {
        type: 'array',
        description:
          'Each kind of signed link the event carries: the time after which its links are certainly dead, and ' +
          'whether that time has passed.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['kind', 'expires_at', 'expired'],
          properties: {
            kind: { type: 'string', enum: [...SIGNED_LINK_KINDS] },
            expires_at: dateTime,
            expired: { type: 'boolean' },
          },
        },
      },
    },
  },
  WebhookLogPage: keysetPage(MAX_LOG_PAGE, {
    type: 'object',
    additionalProperties: false,
    required: [
      'webhook_id',
      'event_id',
      'event_type',
      'action',
      'company_id',
      'status',
      'attempts',
      'expired_links',
      'redelivery_of',
      'is_test',
      'created_at',
      'finished_at',
      'status_url',
    ],
    properties: {
      webhook_id: uuid,
      event_id: { type: 'string' },
      event_type: { type: 'string', enum: [...EVENT_TYPES] },
      action: { type: 'string', enum: [...EVENT_ACTIONS] },
      company_id: { type: ['string', 'null'] },
      status: { type: 'string', enum: [...LOG_STATUSES] },
      attempts: { type: 'integer', minimum: 0 },
      expired_links: expiredLinks(
        'The kinds of signed link that were past their deadline when the latest attempt was sent.',
      ),
      redelivery_of: nullable(uuid),
      is_test: { type: 'boolean' },
      created_at: dateTime,
      finished_at: nullable(dateTime),
      status_url: { type: 'string' },
    },
  }),
  RetryNowAccepted: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'attempt', 'status_url'],
    properties: {
      webhook_id: uuid,
      attempt: { type: 'integer', minimum: 2, maximum: 4 },
      status_url: { type: 'string' },
    },
  },
  CancelRequested: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'status_url'],
    properties: { webhook_id: uuid, status_url: { type: 'string' } },
  },
  Redelivery: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'redelivery_of', 'workflow_id', 'run_id', 'status_url'],
    properties: {
      webhook_id: uuid,
      redelivery_of: uuid,
      workflow_id: { type: 'string' },
      run_id: { type: 'string' },
      status_url: { type: 'string' },
    },
  },
  BulkRedeliveryRequest: zodJsonSchema(bulkRedeliveryBody),
  BulkRedelivery: {
    type: 'object',
    additionalProperties: false,
    required: ['started', 'skipped_expired_links', 'skipped_payload_removed', 'more'],
    properties: {
      started: { type: 'integer', minimum: 0, description: 'Redeliveries this call started.' },
      skipped_expired_links: {
        type: 'integer',
        minimum: 0,
        description: 'Matching originals not redelivered because their signed links are past their deadline.',
      },
      skipped_payload_removed: {
        type: 'integer',
        minimum: 0,
        description: 'Matching originals not redelivered because their body was removed (retention or erasure).',
      },
      more: { type: 'boolean', description: 'Matches are left because `limit` was reached.' },
    },
  },
  BulkRedeliveryPreview: {
    type: 'object',
    additionalProperties: false,
    required: ['dry_run', 'would_start', 'skipped_expired_links', 'skipped_payload_removed', 'more'],
    description:
      'A dry run (`dry_run: true`): what the same request would do now. Nothing is started or written but its ' +
      'audit row.',
    properties: {
      dry_run: { type: 'boolean', const: true },
      would_start: {
        type: 'integer',
        minimum: 0,
        description: 'Redeliveries the same request would start (its `started`).',
      },
      skipped_expired_links: {
        type: 'integer',
        minimum: 0,
        description: 'Matching originals it would skip because their signed links are past their deadline.',
      },
      skipped_payload_removed: {
        type: 'integer',
        minimum: 0,
        description: 'Matching originals it would skip because their body was removed (retention or erasure).',
      },
      more: { type: 'boolean', description: 'Matches would be left because `limit` would be reached.' },
    },
  },
  BulkRedeliveryAnswer: { oneOf: [ref('BulkRedelivery'), ref('BulkRedeliveryPreview')] },
};

/** `POST …/{webhook_id}/<action>`: 202 when accepted, 404 for no such webhook, 409 when its state forbids it. */
const webhookAction = (
  operationId: string,
  summary: string,
  accepted: { description: string; schema: string },
  conflict: string,
  { parameters, responses }: { parameters?: object[]; responses?: Record<string, object> } = {},
) => ({
  parameters: [webhookIdParameter],
  post: operation(
    ['operate'],
    operationId,
    summary,
    {
      '202': { description: accepted.description, content: json(ref(accepted.schema)) },
      '404': error('No such webhook.'),
      '409': error(conflict),
      ...responses,
    },
    parameters ? { parameters } : {},
  ),
});

export const webhookPaths = {
  '/internal/v1/webhooks': {
    get: operation(
      ['read'],
      'listWebhooks',
      'The delivery log, newest first',
      {
        '200': { description: 'One page.', content: json(ref('WebhookLogPage')) },
        '400': error(`A bad filter, limit or cursor, or ${UNTIL_AFTER_SINCE}: one error per parameter.`),
      },
      {
        parameters: zodQueryParameters(listQuery),
      },
    ),
    post: operation(
      ['ingest'],
      'startWebhook',
      'Start a webhook delivery (event_id is the idempotency key)',
      {
        '200': { description: 'The event_id was known: the existing webhook.', content: json(ref('AcceptedWebhook')) },
        '202': { description: 'This call started the delivery.', content: json(ref('AcceptedWebhook')) },
        '400': error('Invalid event or JSON.'),
        '413': error('Body over 1 MB.'),
        '409': error(
          'Concurrent requests with this event_id kept changing its row: nothing was accepted by this one. Retry ' +
            'the same request; has Retry-After.',
        ),
        '415': error('Not application/json.'),
        '500': error("Temporal refused the service's configuration."),
        '503': {
          description: [
            'Not accepted, or not known to be: `reason` says which, and Retry-After says when to retry (always ' +
              'with the same event_id).',
            '`overloaded`: this api process already has INGEST_MAX_STARTS_IN_FLIGHT starts in flight; nothing ' +
              'was stored (Retry-After: 1).',
            '`temporal_unreachable`: Temporal could not be reached; nothing was stored (Retry-After: 30).',
            '`outcome_unknown`: Temporal did not answer in time; the webhook may or may not have been accepted ' +
              '(Retry-After: 5). A retry answers 202 (200 when another retry was first) whichever it was, and ' +
              'never starts a second delivery; unretried, the worker settles it within ' +
              'WEBHOOK_START_DOUBT_SECONDS plus 15 s (75 s as shipped): the delivery goes on, or nothing is kept.',
            '`subject_index_key`: this api process lacks the subject index keys the deployment indexes ' +
              'personal data under (docs/personal-data.md#index-keys); nothing was stored (Retry-After: 30). ' +
              'Another replica takes the same request.',
            '`token_store_unavailable`: ' +
              TOKEN_STORE_UNAVAILABLE.replace(/^or \(`reason` token_store_unavailable\) /, '') +
              '.',
          ].join(' '),
          content: json(ref('IngestRefusal')),
        },
      },
      { requestBody: { required: true, content: json(ref('WebhookEvent')) } },
    ),
  },
  '/internal/v1/webhooks/redeliver': {
    post: operation(
      ['operate'],
      'redeliverWebhooks',
      'Redeliver every finished webhook matching a filter, once per filter',
      {
        '200': {
          description:
            'How many started; an identical call starts nothing new. With `dry_run: true`, how many it would ' +
            'start, and nothing is started.',
          content: json(ref('BulkRedeliveryAnswer')),
        },
        '400': error(`A bad filter, or ${UNTIL_AFTER_SINCE}: one error per field.`),
        '415': error('Not application/json.'),
      },
      { requestBody: { required: true, content: json(ref('BulkRedeliveryRequest')) } },
    ),
  },
  '/internal/v1/webhooks/{webhook_id}': getOne(
    ['ingest', 'read'],
    webhookIdParameter,
    'getWebhook',
    "A webhook: its event, every attempt and the live state (the event and the answers' excerpts need `read`)",
    'WebhookDetail',
    'webhook',
  ),
  '/internal/v1/webhooks/{webhook_id}/retry-now': webhookAction(
    'retryWebhookNow',
    'Make the next attempt of a waiting delivery at once (recorded as manual)',
    { description: 'The attempt is being made.', schema: 'RetryNowAccepted' },
    'The delivery is not waiting for a retry.',
  ),
  '/internal/v1/webhooks/{webhook_id}/cancel': webhookAction(
    'cancelWebhook',
    'Stop a pending delivery; recorded as cancelled',
    { description: 'Cancellation requested.', schema: 'CancelRequested' },
    'The delivery has ended.',
  ),
  '/internal/v1/webhooks/{webhook_id}/redeliver': webhookAction(
    'redeliverWebhook',
    'Start a new delivery of a finished webhook, with the same webhook-id header',
    { description: 'The redelivery started.', schema: 'Redelivery' },
    "The delivery has not finished, or the event's signed links are past their deadline and " +
      'allow_expired_links is not true (`detail` names the deadlines).',
    {
      parameters: zodQueryParameters(redeliveryQuery),
      responses: { '400': error('allow_expired_links is neither true nor false.') },
    },
  ),
};
