import type { Knex } from 'knex';
import * as directoryAndWebhooks from './001_directory_and_webhooks';
import * as scimIndexes from './002_scim_indexes';
import * as scimGroupTotal from './003_scim_group_total';
import * as webhookStoppedStatuses from './004_webhook_stopped_statuses';
import * as scimCaseFolding from './005_scim_case_folding';
import * as webhookBody from './006_webhook_body';
import * as webhookAttemptClaims from './007_webhook_attempt_claims';
import * as webhookOperations from './008_webhook_operations';
import * as listingCounts from './009_listing_counts';
import * as scimUserIndexes from './010_scim_user_indexes';
import * as analyzeExpressionIndexes from './011_analyze_expression_indexes';
import * as signedLinkDeadlines from './012_signed_link_deadlines';
import * as webhookStartReported from './013_webhook_start_reported';
import * as partnerGate from './014_partner_gate';
import * as personalData from './015_personal_data';
import * as tokensAndAudit from './016_tokens_and_audit';
import * as startsInDoubt from './017_starts_in_doubt';
import * as erasureCompleteness from './018_erasure_completeness';
import * as encryptionAtRest from './019_encryption_at_rest';
import * as verifiableAudit from './020_verifiable_audit';
import * as decodeScope from './021_decode_scope';
import * as entityOrdering from './022_entity_ordering';
import * as flatYearIndexes from './023_flat_year_indexes';
import * as laneKeyIndex from './024_lane_key_index';
import * as laneSubjects from './025_lane_subjects';
import * as erasureQuietRuns from './026_erasure_quiet_runs';
import * as appScopes from './027_app_scopes';
import * as partnerEndpointControls from './028_partner_endpoint_controls';
import * as signingSecrets from './029_signing_secrets';
import * as partnerRecoveries from './030_partner_recoveries';
import * as partnerDeliveryList from './031_partner_delivery_list';
import * as portalSessions from './032_portal_sessions';
import * as partnerFeed from './033_partner_feed';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
  /** `{ transaction: false }` for a migration that cannot run in one (CREATE INDEX CONCURRENTLY). */
  config?: { transaction: boolean };
}

/** Every migration, in order. Listed here rather than read from disk so source and compiled runs agree. */
export const migrations: ReadonlyArray<readonly [name: string, migration: Migration]> = [
  ['001_directory_and_webhooks', directoryAndWebhooks],
  ['002_scim_indexes', scimIndexes],
  ['003_scim_group_total', scimGroupTotal],
  ['004_webhook_stopped_statuses', webhookStoppedStatuses],
  ['005_scim_case_folding', scimCaseFolding],
  ['006_webhook_body', webhookBody],
  ['007_webhook_attempt_claims', webhookAttemptClaims],
  ['008_webhook_operations', webhookOperations],
  ['009_listing_counts', listingCounts],
  ['010_scim_user_indexes', scimUserIndexes],
  ['011_analyze_expression_indexes', analyzeExpressionIndexes],
  ['012_signed_link_deadlines', signedLinkDeadlines],
  ['013_webhook_start_reported', webhookStartReported],
  ['014_partner_gate', partnerGate],
  ['015_personal_data', personalData],
  ['016_tokens_and_audit', tokensAndAudit],
  ['017_starts_in_doubt', startsInDoubt],
  ['018_erasure_completeness', erasureCompleteness],
  ['019_encryption_at_rest', encryptionAtRest],
  ['020_verifiable_audit', verifiableAudit],
  ['021_decode_scope', decodeScope],
  ['022_entity_ordering', entityOrdering],
  ['023_flat_year_indexes', flatYearIndexes],
  ['024_lane_key_index', laneKeyIndex],
  ['025_lane_subjects', laneSubjects],
  ['026_erasure_quiet_runs', erasureQuietRuns],
  ['027_app_scopes', appScopes],
  ['028_partner_endpoint_controls', partnerEndpointControls],
  ['029_signing_secrets', signingSecrets],
  ['030_partner_recoveries', partnerRecoveries],
  ['031_partner_delivery_list', partnerDeliveryList],
  ['032_portal_sessions', portalSessions],
  ['033_partner_feed', partnerFeed],
];
