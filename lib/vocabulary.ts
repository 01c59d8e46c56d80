// The domain's closed vocabularies. Migrations freeze their own literals in CHECK constraints;
// test/foundation/migrations.test.ts fails when these lists and the database's constraints drift apart, so adding a
// value means adding a migration that widens its constraint. Partner protection's states are in partner-states.ts,
// beside their transitions (no column stores them).

export const COMPANY_ROLES = ['admin', 'owner', 'manager', 'member'] as const;
export const JOB_ROLES = ['job_owner', 'collaborator', 'viewer', 'job_interviewer'] as const;

/** Spec 2.1: the type/action pairs of a webhook envelope. */
export const EVENT_TYPES = ['company', 'job', 'candidate'] as const;
export const EVENT_ACTIONS = ['new', 'update', 'dynamic_update', 'signup'] as const;

/** Where a webhook's row stands: pending until the workflow records how it ended. */
export const WEBHOOK_STATUSES = ['pending', 'delivered', 'failed', 'cancelled', 'terminated'] as const;

/**
 * A webhook's status in the delivery log: `pending` split into `held` (its next attempt waits for the partner
 * gate to open), `waiting` (an attempt failed, the next one is due) and `pending`.
 */
export const LOG_STATUSES = ['pending', 'held', 'waiting', 'delivered', 'failed', 'cancelled', 'terminated'] as const;

/** Statuses of a delivery that ended, the only ones a redelivery may start from. */
export const FINISHED_STATUSES = ['delivered', 'failed', 'cancelled', 'terminated'] as const;

/** Why an attempt without an HTTP answer failed. */
export const ATTEMPT_ERROR_CLASSES = ['timeout', 'connection_refused', 'dns', 'tls', 'reset', 'other'] as const;

/**
 * Why POST /internal/v1/webhooks answered 503 (the body's `reason`; not stored): `overloaded` and
 * `temporal_unreachable` stored nothing; `outcome_unknown` may or may not have started the delivery.
 */
export const INGEST_REFUSAL_REASONS = [
  'overloaded',
  'temporal_unreachable',
  'outcome_unknown',
  'subject_index_key',
  'encryption_required',
] as const;
export type IngestRefusalReason = (typeof INGEST_REFUSAL_REASONS)[number];

/** What started an attempt: the retry schedule, or an operator's retry-now. */
export const ATTEMPT_TRIGGERS = ['schedule', 'manual'] as const;

/** What started a retention run: its Temporal Schedule, or an operator (`partner-service retention run`). */
export const RETENTION_TRIGGERS = ['schedule', 'manual'] as const;

/**
 * What a named token of the internal API may do (docs/access.md): start webhooks and read their status
 * (`ingest`), read the delivery log, statuses, the partner and the audit trail (`read`), change deliveries and
 * the partner gate (`operate`), erase a person's data (`erase`), and decrypt Temporal payloads through the codec
 * server (`decode`). A webhook's body and the partner's answers need `read`: `ingest` sees a status without them.
 */
export const TOKEN_SCOPES = ['ingest', 'read', 'operate', 'erase', 'decode'] as const;

/**
 * The scopes of the shared INTERNAL_API_TOKEN: the internal API's, not `decode` (the codec has its own shared token).
 */
export const INTERNAL_API_SCOPES = ['ingest', 'read', 'operate', 'erase'] as const satisfies readonly TokenScope[];

/**
 * Why a request was refused with 401 or 403 (partner_service_auth_failures_total and its log line): no
 * credentials; credentials unknown or wrong; a named token revoked or expired; a valid token without the scope
 * the route needs; an app whose key is right but that is not granted the company it asks for.
 */
/**
 * What a partner app may do (docs/partners.md, "The partner API"): `listings` (the REST user listings, every app's
 * default), reading its deliveries, recovering them and sending test events, and managing the partner's endpoint.
 */
export const APP_SCOPES = ['listings', 'deliveries:read', 'deliveries:write', 'endpoint:manage'] as const;
export type AppScope = (typeof APP_SCOPES)[number];
/** An app created without `--scope` gets what every app had before scopes existed. */
export const DEFAULT_APP_SCOPES: readonly AppScope[] = ['listings'];

export const AUTH_FAILURE_REASONS = [
  'missing_token',
  'invalid_token',
  'revoked',
  'expired',
  'missing_scope',
  'not_granted',
  'cross_site',
] as const;
export type AuthFailureReason = (typeof AUTH_FAILURE_REASONS)[number];

/**
 * The changes an operator makes that the audit trail records, through the API or the CLI (docs/access.md,
 * "Audit trail").
 */
export const AUDIT_ACTIONS = [
  'partner.pause',
  'partner.resume',
  'partner.limit',
  'webhook.cancel',
  'webhook.retry_now',
  'webhook.redeliver',
  'webhooks.redeliver',
  'erasure.request',
  'token.create',
  'token.revoke',
  'keys.reseal',
  'personal_data.reindex',
  'retention.run',
  'audit.purge',
  'app.create',
  'app.revoke',
  'app.scopes',
  'recovery.start',
  'recovery.cancel',
  'endpoint.pause',
  'endpoint.resume',
  'endpoint.limit',
  'signing_secret.create',
  'signing_secret.delete',
  'test_event.send',
  'portal.link',
  'portal.open',
  'portal.close',
  'directory.import',
  'webhook.send',
  'webhook.send_test',
  'ordering.skip',
  'ordering.retry',
] as const;

/** An audit row's phase: `intent` before a call outside PostgreSQL, `outcome` once it is known (or with the change). */
export const AUDIT_PHASES = ['intent', 'outcome'] as const;

/** How an operator's change ended, on its audit row. */
export const AUDIT_OUTCOMES = ['succeeded', 'failed'] as const;

/** The signed links of an event (spec 2.4 and 8): candidate files (24 h) and file answers (2 h). */
export const SIGNED_LINK_KINDS = ['files', 'file_answers'] as const;

export type CompanyRole = (typeof COMPANY_ROLES)[number];
export type JobRole = (typeof JOB_ROLES)[number];
export type EventType = (typeof EVENT_TYPES)[number];
export type EventAction = (typeof EVENT_ACTIONS)[number];
export type TokenScope = (typeof TOKEN_SCOPES)[number];
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
export type AuditPhase = (typeof AUDIT_PHASES)[number];
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];
export type AttemptErrorClass = (typeof ATTEMPT_ERROR_CLASSES)[number];
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];
export type RetentionTrigger = (typeof RETENTION_TRIGGERS)[number];
export type LogStatus = (typeof LOG_STATUSES)[number];
export type SignedLinkKind = (typeof SIGNED_LINK_KINDS)[number];
