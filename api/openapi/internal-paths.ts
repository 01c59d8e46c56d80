import { CHAIN_PROBLEM_KINDS } from '../../application/audit-verify';
import { ATTEMPT_ERROR_CLASSES, ATTEMPT_TRIGGERS, AUDIT_ACTIONS, AUDIT_OUTCOMES, AUDIT_PHASES, EVENT_ACTIONS, EVENT_TYPES, INGEST_REFUSAL_REASONS, LOG_STATUSES, SIGNED_LINK_KINDS, WEBHOOK_STATUSES, type TokenScope } from '../../lib/vocabulary';
import { PARTNER_STATES } from '../../lib/partner-states';
import { bulkRedeliveryBody, listQuery, MAX_LOG_PAGE, redeliveryQuery } from '../../application/webhook-filter';
import { limitRequest, pauseRequest } from '../../application/partner-operator';
import { erasureRequest } from '../../application/erasure';
import { SUBJECT_KINDS } from '../../lib/subject-index';
import { auditQuery, MAX_AUDIT_PAGE } from '../../application/audit-log';
import { REVOCATION_BOUND_MS } from '../../application/token-checker';
import { zodJsonSchema, zodQueryParameters } from './zod-json-schema';

// The internal API in the OpenAPI document: every operation states the token scope(s) it needs (the routers'
// requireScope; test/access/token-matrix.test.ts holds both to the same list). Every query and body the routes check with zod is generated from that zod schema; the answers are stated here.

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json(ref('InternalError')) });
const dateTime = { type: 'string', format: 'date-time' };
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
const uuid = { type: 'string', format: 'uuid' };
const expiredLinks = (description: string) => ({ type: 'array', uniqueItems: true, items: { type: 'string', enum: [...SIGNED_LINK_KINDS] }, description });

const webhookIdParameter = { name: 'webhook_id', in: 'path', required: true, schema: uuid, description: 'The webhook id (any other value answers 404).' };

/** A keyset-paged list's answer, newest first: the `next` link and up to `maxItems` rows of `item`. */
const keysetPage = (maxItems: number, item: object) => ({
  type: 'object',
  additionalProperties: false,
  required: ['next', 'results'],
  properties: {
    next: { type: ['string', 'null'], description: 'The next page (keyset cursor), or null on the last one.' },
    results: { type: 'array', maxItems, description: 'Newest first.', items: item },
  },
});

/** JSON Schema cannot compare two fields, so the window's rule is stated in words where it answers 400. */
const UNTIL_AFTER_SINCE = '`until` not later than `since`';

const challenge = { 'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer realm="internal", with error="invalid_token" for a token that was presented.' } };
/** The answers of the token check (api/internal/bearer-auth.ts), on every internal operation. */
const authErrors = {
  '401': { ...error('No bearer token, or an unknown, revoked or expired one; `detail` says which.'), headers: challenge },
  '403': {
    ...error('The token does not have the scope the operation needs: `reason` is `missing_scope` and `detail` names the token and the scope.'),
    headers: { 'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer realm="internal", error="insufficient_scope", scope="<the scopes>".' } },
  },
};
const TOKEN_STORE_UNAVAILABLE = `or (\`reason\` token_store_unavailable) a named token cannot be checked: this process has not read the tokens from PostgreSQL for over ${REVOCATION_BOUND_MS / 1000} s`;
const commonErrors = {
  ...authErrors,
  '503': error(`Temporal is unavailable or did not answer in time (\`detail\` says whether anything may have changed), ${TOKEN_STORE_UNAVAILABLE}. Has Retry-After.`),
};

/** The operation's security requirement (any one of `scopes`) and the sentence its description starts with. */
function scoped(scopes: readonly [TokenScope, ...TokenScope[]]) {
  const named = scopes.map((scope) => `\`${scope}\``).join(' or ');
  return {
    description: `Needs a token with the scope ${named} (or INTERNAL_API_TOKEN, which has every scope).`,
    security: scopes.map((scope) => ({ InternalToken: [scope] })),
  };
}

/** The status URL's payload fields: `ingest` alone may follow a delivery, not read the candidate's data it carries. */
const NEEDS_READ = 'Absent (not null) when the token does not have the scope `read` (a token with `ingest` alone).';

export const internalSchemas = {
  InternalError: {
    type: 'object',
    required: ['detail'],
    additionalProperties: false,
    properties: {
      detail: { type: 'string' },
      errors: { type: 'array', items: { type: 'object', required: ['path', 'message'], additionalProperties: false, properties: { path: { type: 'string' }, message: { type: 'string' } } } },
      reason: { type: 'string' },
    },
  },
  IngestRefusal: {
    type: 'object',
    required: ['detail', 'reason'],
    additionalProperties: false,
    properties: { detail: { type: 'string' }, reason: { type: 'string', enum: [...INGEST_REFUSAL_REASONS, 'token_store_unavailable'] } },
  },
  AcceptedWebhook: {
    type: 'object',
    required: ['webhook_id', 'event_id', 'workflow_id', 'run_id', 'status_url'],
    additionalProperties: false,
    properties: { webhook_id: uuid, event_id: { type: 'string' }, workflow_id: { type: 'string' }, run_id: { type: 'string' }, status_url: { type: 'string' } },
  },
  Attempt: {
    type: 'object',
    additionalProperties: false,
    required: ['attempt', 'trigger', 'scheduled_at', 'started_at', 'duration_ms', 'http_status', 'error_class', 'error_message', 'succeeded', 'expired_links', 'recorded_at'],
    properties: {
      attempt: { type: 'integer', minimum: 1, maximum: 4 },
      trigger: { type: 'string', enum: [...ATTEMPT_TRIGGERS], description: '`manual` for an attempt made by retry-now.' },
      scheduled_at: dateTime,
      started_at: dateTime,
      duration_ms: { type: 'integer', minimum: 0 },
      http_status: { type: ['integer', 'null'] },
      error_class: { enum: [...ATTEMPT_ERROR_CLASSES, null] },
      error_message: { type: ['string', 'null'] },
      response_body: { type: ['string', 'null'], description: `The first 4 KiB of the answer; null once removed (payload_removed_at). ${NEEDS_READ}` },
      succeeded: { type: 'boolean' },
      expired_links: expiredLinks('The kinds of signed link in the event that were past their deadline when this attempt was sent.'),
      recorded_at: dateTime,
    },
  },
  WebhookDetail: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'event_id', 'event_type', 'action', 'company_id', 'workflow_id', 'run_id', 'status', 'redelivery_of', 'is_test', 'accepted_at', 'created_at', 'updated_at', 'finished_at', 'held_since', 'status_reason', 'payload_removed_at', 'payload_removed_reason', 'attempts', 'live', 'signed_links'],
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
      accepted_at: { ...dateTime, description: 'When the service accepted the event (a redelivery: its original); signed links are dated from it.' },
      created_at: dateTime,
      updated_at: dateTime,
      finished_at: nullable(dateTime),
      held_since: { ...nullable(dateTime), description: 'Set while the next attempt waits for the partner gate to open (pause, breaker, Retry-After); that attempt is not spent.' },
      status_reason: { type: ['string', 'null'], enum: ['erasure', null], description: '`erasure`: an erasure request cancelled this delivery before it was sent.' },
      payload_removed_at: { ...nullable(dateTime), description: 'When the body and the response excerpts were removed (by the retention purge or an erasure); the delivery log keeps the rest.' },
      payload_removed_reason: { type: ['string', 'null'], enum: ['retention', 'erasure', null] },
      event: { type: ['object', 'null'], description: `The exact body every attempt sends; null once it was removed (payload_removed_at). ${NEEDS_READ}` },
      attempts: { type: 'array', items: ref('Attempt') },
      live: {
        description: 'Null once the status is final. Otherwise the workflow\'s own state, or (source database) why Temporal did not answer.',
        oneOf: [
          { type: 'null' },
          {
            type: 'object',
            additionalProperties: false,
            required: ['source', 'state', 'next_attempt_at'],
            properties: { source: { const: 'temporal' }, state: { type: 'string' }, next_attempt_at: nullable(dateTime) },
          },
          { type: 'object', additionalProperties: false, required: ['source', 'reason'], properties: { source: { const: 'database' }, reason: { type: 'string' } } },
        ],
      },
      signed_links: {
        type: 'array',
        description: 'Each kind of signed link the event carries: the time after which its links are certainly dead, and whether that time has passed.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['kind', 'expires_at', 'expired'],
          properties: { kind: { type: 'string', enum: [...SIGNED_LINK_KINDS] }, expires_at: dateTime, expired: { type: 'boolean' } },
        },
      },
    },
  },
  WebhookLogPage: keysetPage(MAX_LOG_PAGE, {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'event_id', 'event_type', 'action', 'company_id', 'status', 'attempts', 'expired_links', 'redelivery_of', 'is_test', 'created_at', 'finished_at', 'status_url'],
    properties: {
      webhook_id: uuid,
      event_id: { type: 'string' },
      event_type: { type: 'string', enum: [...EVENT_TYPES] },
      action: { type: 'string', enum: [...EVENT_ACTIONS] },
      company_id: { type: ['string', 'null'] },
      status: { type: 'string', enum: [...LOG_STATUSES] },
      attempts: { type: 'integer', minimum: 0 },
      expired_links: expiredLinks('The kinds of signed link that were past their deadline when the latest attempt was sent.'),
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
    properties: { webhook_id: uuid, attempt: { type: 'integer', minimum: 2, maximum: 4 }, status_url: { type: 'string' } },
  },
  CancelRequested: { type: 'object', additionalProperties: false, required: ['webhook_id', 'status_url'], properties: { webhook_id: uuid, status_url: { type: 'string' } } },
  Redelivery: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'redelivery_of', 'workflow_id', 'run_id', 'status_url'],
    properties: { webhook_id: uuid, redelivery_of: uuid, workflow_id: { type: 'string' }, run_id: { type: 'string' }, status_url: { type: 'string' } },
  },
  BulkRedeliveryRequest: zodJsonSchema(bulkRedeliveryBody),
  PartnerStatus: {
    type: 'object',
    additionalProperties: false,
    required: ['state', 'reason', 'since', 'held', 'max_per_second', 'max_per_second_source', 'retry_after_until', 'hold_ceiling_seconds', 'breaker'],
    properties: {
      state: { type: 'string', enum: [...PARTNER_STATES], description: '`paused` by an operator, `tripped` by the breaker, `throttled` until a Retry-After; `active` otherwise.' },
      reason: { type: ['string', 'null'], description: "The operator's reason while paused." },
      since: { ...nullable(dateTime), description: 'When the hold in force began.' },
      held: { type: 'integer', minimum: 0, description: 'Deliveries whose next attempt waits for the hold to end; none of those attempts is spent.' },
      max_per_second: { type: 'integer', minimum: 1, description: 'POSTs per second of every worker together.' },
      max_per_second_source: { type: 'string', enum: ['operator', 'configuration'] },
      retry_after_until: nullable(dateTime),
      hold_ceiling_seconds: { type: 'number', description: 'PARTNER_HOLD_CEILING_MS: past this long held, a delivery goes on with its schedule.' },
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
  ErasureRequest: zodJsonSchema(erasureRequest),
  ErasureAccepted: {
    type: 'object',
    required: ['erasure_id', 'status', 'status_url'],
    additionalProperties: false,
    properties: { erasure_id: uuid, status: { const: 'pending' }, status_url: { type: 'string' } },
  },
  Erasure: {
    type: 'object',
    additionalProperties: false,
    required: [
      'erasure_id', 'status', 'subject_kind', 'company_id', 'requested_by', 'requested_at', 'webhooks_found', 'deliveries_cancelled',
      'bodies_removed', 'runs_deleted', 'runs_gone', 'pending_reason', 'index_key_ids', 'completed_at', 'updated_at', 'status_url',
    ],
    properties: {
      erasure_id: uuid,
      status: {
        type: 'string',
        enum: ['pending', 'completed'],
        description:
          '`completed`: every body found is removed, every start of those webhooks is settled, and Temporal serves no run of their workflow ids (not by run id, not by workflow id, not in a list).',
      },
      subject_kind: { type: 'string', enum: [...SUBJECT_KINDS], description: 'The record keeps the kind and an HMAC of the subject, never the subject.' },
      company_id: { type: ['string', 'null'] },
      requested_by: { type: 'string', description: 'The actor: the token\'s name, `INTERNAL_API_TOKEN`, or `cli:<user>@<host>`.' },
      requested_at: dateTime,
      webhooks_found: { type: ['integer', 'null'], minimum: 0, description: 'Null until the webhooks are erased.' },
      deliveries_cancelled: { type: ['integer', 'null'], minimum: 0, description: 'Pending deliveries cancelled (status `cancelled`, status_reason `erasure`).' },
      bodies_removed: { type: ['integer', 'null'], minimum: 0, description: 'Bodies removed by this erasure (those the retention purge had removed are not counted).' },
      runs_deleted: { type: ['integer', 'null'], minimum: 0, description: 'Workflow ids whose runs (every run: resets and late starts too) were deleted; null until the deletes are made. A test send has none.' },
      runs_gone: { type: ['integer', 'null'], minimum: 0, description: 'Of those, the workflow ids Temporal serves no run of any more (deletion is asynchronous).' },
      pending_reason: { type: ['string', 'null'], description: 'Why a pending erasure is not completed yet: a step failing and retried, runs Temporal still serves, or starts not settled. Null once nothing holds it.' },
      index_key_ids: { type: 'array', items: { type: 'string' }, description: 'The ids of the subject index keys it searched under (SUBJECT_INDEX_KEYS; `development` for the development key).' },
      completed_at: nullable(dateTime),
      updated_at: dateTime,
      status_url: { type: 'string' },
    },
  },
  PartnerPause: zodJsonSchema(pauseRequest),
  PartnerLimit: zodJsonSchema(limitRequest),
  BulkRedelivery: {
    type: 'object',
    additionalProperties: false,
    required: ['started', 'skipped_expired_links', 'skipped_payload_removed', 'more'],
    properties: {
      started: { type: 'integer', minimum: 0, description: 'Redeliveries this call started.' },
      skipped_expired_links: { type: 'integer', minimum: 0, description: 'Matching originals not redelivered because their signed links are past their deadline.' },
      skipped_payload_removed: { type: 'integer', minimum: 0, description: 'Matching originals not redelivered because their body was removed (retention or erasure).' },
      more: { type: 'boolean', description: 'Matches are left because `limit` was reached.' },
    },
  },
};

/** An operation with its own answers, then the token check's; its own 503, if it has one, replaces the common one. */
const operation = (scopes: readonly [TokenScope, ...TokenScope[]], operationId: string, summary: string, responses: Record<string, object>, extra: object = {}) => ({
  operationId,
  summary,
  tags: ['internal'],
  ...scoped(scopes),
  ...extra,
  responses: { ...responses, ...commonErrors, ...('503' in responses && { '503': responses['503'] }) },
});

/** `GET …/{id}`: the one resource, or 404. */
const getOne = (scopes: readonly [TokenScope, ...TokenScope[]], parameter: object, operationId: string, summary: string, schema: string, noun: string) => ({
  parameters: [parameter],
  get: operation(scopes, operationId, summary, { '200': { description: `The ${noun}.`, content: json(ref(schema)) }, '404': error(`No such ${noun}.`) }),
});

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

export const internalPaths = {
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
        '409': error('Concurrent requests with this event_id kept changing its row: nothing was accepted by this one. Retry the same request; has Retry-After.'),
        '415': error('Not application/json.'),
        '500': error("Temporal refused the service's configuration."),
        '503': {
          description: [
            'Not accepted, or not known to be: `reason` says which, and Retry-After says when to retry (always with the same event_id).',
            '`overloaded`: this api process already has INGEST_MAX_STARTS_IN_FLIGHT starts in flight; nothing was stored (Retry-After: 1).',
            '`temporal_unreachable`: Temporal could not be reached; nothing was stored (Retry-After: 30).',
            '`outcome_unknown`: Temporal did not answer in time; the webhook may or may not have been accepted (Retry-After: 5). A retry answers 202 (200 when another retry was first) whichever it was, and never starts a second delivery; unretried, the worker settles it within WEBHOOK_START_DOUBT_SECONDS plus 15 s (75 s as shipped): the delivery goes on, or nothing is kept.',
            '`subject_index_key`: this api process lacks the subject index keys the deployment indexes personal data under (docs/personal-data.md#index-keys); nothing was stored (Retry-After: 30). Another replica takes the same request.',
            `\`token_store_unavailable\`: ${TOKEN_STORE_UNAVAILABLE.replace(/^or \(`reason` token_store_unavailable\) /, '')}.`,
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
        '200': { description: 'How many started; an identical call starts nothing new.', content: json(ref('BulkRedelivery')) },
        '400': error(`A bad filter, or ${UNTIL_AFTER_SINCE}: one error per field.`),
        '415': error('Not application/json.'),
      },
      { requestBody: { required: true, content: json(ref('BulkRedeliveryRequest')) } },
    ),
  },
  '/internal/v1/webhooks/{webhook_id}': getOne(['ingest', 'read'], webhookIdParameter, 'getWebhook', 'A webhook: its event, every attempt and the live state (the event and the answers\' excerpts need `read`)', 'WebhookDetail', 'webhook'),
  '/internal/v1/webhooks/{webhook_id}/retry-now': webhookAction('retryWebhookNow', 'Make the next attempt of a waiting delivery at once (recorded as manual)',
    { description: 'The attempt is being made.', schema: 'RetryNowAccepted' }, 'The delivery is not waiting for a retry.'),
  '/internal/v1/webhooks/{webhook_id}/cancel': webhookAction('cancelWebhook', 'Stop a pending delivery; recorded as cancelled',
    { description: 'Cancellation requested.', schema: 'CancelRequested' }, 'The delivery has ended.'),
  '/internal/v1/webhooks/{webhook_id}/redeliver': webhookAction('redeliverWebhook', 'Start a new delivery of a finished webhook, with the same webhook-id header',
    { description: 'The redelivery started.', schema: 'Redelivery' },
    "The delivery has not finished, or the event's signed links are past their deadline and allow_expired_links is not true (`detail` names the deadlines).",
    {
      parameters: zodQueryParameters(redeliveryQuery),
      responses: { '400': error('allow_expired_links is neither true nor false.') },
    },
  ),
};

/** The refusals of a route that reads and writes PostgreSQL only, which no Temporal outage can reach. */
const postgresOnlyErrors = {
  ...authErrors,
  '503': error(`A named token cannot be checked (\`reason\` token_store_unavailable): this process has not read the tokens from PostgreSQL for over ${REVOCATION_BOUND_MS / 1000} s. Has Retry-After.`),
};

/** The partner routes read and write PostgreSQL only: no Temporal outage can reach them. */
const partnerOperation = (scope: TokenScope, operationId: string, summary: string, responses: Record<string, object>, extra: object = {}) => ({
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
const badBody = { '400': error('Invalid JSON or field: one error per field.'), '413': error('Body over 1 MB.'), '415': error('Not application/json.') };

export const partnerPaths = {
  '/internal/v1/partner': { get: partnerOperation('read', 'getPartner', 'The partner gate: state, reason, since when, deliveries held, the cap in force, the breaker', {}) },
  '/internal/v1/partner/pause': {
    post: partnerOperation('operate', 'pausePartner', 'Hold every delivery: webhooks are still accepted, no POST leaves any worker', badBody, partnerBody('PartnerPause')),
  },
  '/internal/v1/partner/resume': { post: partnerOperation('operate', 'resumePartner', 'End a pause: held deliveries go out at the cap, oldest first', {}) },
  '/internal/v1/partner/limit': {
    post: partnerOperation('operate', 'limitPartner', 'Set the POSTs per second of every worker together, at run time', badBody, partnerBody('PartnerLimit')),
  },
};

const erasureIdParameter = { name: 'erasure_id', in: 'path', required: true, schema: uuid, description: 'The erasure id (any other value answers 404).' };

export const erasurePaths = {
  '/internal/v1/erasures': {
    post: operation(
      ['erase'],
      'requestErasure',
      "Erase a subject's webhooks: bodies, response excerpts and Temporal runs; pending deliveries cancelled",
      {
        '202': { description: 'Recorded; the erasure runs in the background. Location is its status URL.', content: json(ref('ErasureAccepted')) },
        ...badBody,
        '400': error('Invalid JSON, both subjects or neither, an empty candidate_id, a malformed e-mail address: one error per field.'),
        '500': error("Temporal refused the service's configuration."),
      },
      { requestBody: { required: true, content: json(ref('ErasureRequest')) } },
    ),
  },
  '/internal/v1/erasures/{erasure_id}': getOne(['erase'], erasureIdParameter, 'getErasure', 'An erasure: its status, counts and times', 'Erasure', 'erasure'),
};

// The audit trail: read only, PostgreSQL only (no Temporal outage reaches it), scope `read`.
export const auditSchemas = {
  AuditPage: keysetPage(MAX_AUDIT_PAGE, {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'seq', 'at', 'actor', 'action', 'target', 'parameters', 'phase', 'operation_id', 'outcome', 'outcome_recorded', 'error', 'request_id', 'hash'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      seq: { type: 'integer', minimum: 1, description: 'Its place in the hash chain.' },
      at: dateTime,
      actor: { type: 'string', description: "A token's name, `INTERNAL_API_TOKEN` (the shared token) or `cli:<user>@<host>`." },
      action: { type: 'string', enum: [...AUDIT_ACTIONS] },
      target: { type: ['string', 'null'], description: 'A webhook id, the task queue, a token name; null where the action has none.' },
      parameters: { type: 'object', description: 'What the change was asked with: never a secret nor personal data.' },
      phase: { type: 'string', enum: [...AUDIT_PHASES], description: '`intent`: written before a call to Temporal (or another step outside one transaction); `outcome`: how it ended, or a change made in one transaction.' },
      operation_id: { type: 'string', format: 'uuid', description: 'Shared by an intent and its outcome.' },
      outcome: { type: ['string', 'null'], enum: [...AUDIT_OUTCOMES, null], description: 'Null on an intent row.' },
      outcome_recorded: { type: 'boolean', description: 'False only for an intent whose outcome row does not exist (a crash between the two, or a call still running).' },
      error: { type: ['string', 'null'], description: 'Why the change failed; null when it succeeded.' },
      request_id: { type: ['string', 'null'], description: "The API request's X-Request-Id; null for the CLI." },
      hash: { type: 'string', description: "SHA-256 over the previous row's hash and this row's content, in 64 hex digits." },
    },
  }),
  AuditVerification: {
    type: 'object',
    additionalProperties: false,
    required: ['intact', 'rows', 'anchor', 'head', 'first_problem', 'problems', 'problems_total'],
    properties: {
      intact: { type: 'boolean' },
      rows: { type: 'integer', minimum: 0 },
      anchor: ref('AuditChainEnd'),
      head: ref('AuditChainEnd'),
      first_problem: { oneOf: [ref('AuditChainProblem'), { type: 'null' }] },
      problems: { type: 'array', maxItems: 100, items: ref('AuditChainProblem') },
      problems_total: { type: 'integer', minimum: 0 },
    },
  },
  AuditChainEnd: {
    type: 'object',
    additionalProperties: false,
    required: ['seq', 'hash'],
    properties: { seq: { type: 'integer', minimum: 0 }, hash: { type: 'string', description: 'SHA-256, 64 hex digits (64 zeros for the anchor before any purge).' } },
  },
  AuditChainProblem: {
    type: 'object',
    additionalProperties: false,
    required: ['kind', 'position', 'id', 'detail'],
    properties: {
      kind: { type: 'string', enum: [...CHAIN_PROBLEM_KINDS] },
      position: { type: 'integer', minimum: 0, description: 'The seq where the chain breaks.' },
      id: { type: ['integer', 'null'] },
      detail: { type: 'string' },
    },
  },
};

export const auditPaths = {
  '/internal/v1/audit': {
    get: {
      operationId: 'listAuditEvents',
      summary: 'The audit trail: every change an operator made, through the API or the CLI, newest first',
      tags: ['internal'],
      ...scoped(['read']),
      parameters: zodQueryParameters(auditQuery),
      responses: {
        '200': { description: 'One page.', content: json(ref('AuditPage')) },
        '400': error('A bad filter, limit or cursor: one error per parameter.'),
        ...postgresOnlyErrors,
      },
    },
  },
  '/internal/v1/audit/verify': {
    get: {
      operationId: 'verifyAuditTrail',
      summary: "Walks the audit trail's hash chain and names every row missing, edited or out of place (as `partner-service audit verify`)",
      tags: ['internal'],
      ...scoped(['read']),
      responses: {
        '200': { description: 'The report, intact or not (`intact`).', content: json(ref('AuditVerification')) },
        ...postgresOnlyErrors,
      },
    },
  },
};
