// Webhook rows of the partner API's tests, written straight into PostgreSQL: the read side reads what the rows
// hold, so each test states exactly what they hold.
import { randomUUID } from 'node:crypto';
import type { Knex } from '../../db/database';
import { envelopeBody, toEnvelope } from '../../events/envelope';
import { dataAtRest } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import { laneDigest } from '../../store/ordering/lanes';
import { indexKeysOf } from '../../store/personal-data/subject-index-keys';
import candidateNew from '../fixtures/events/candidate-new.json';
import { openApiDocument } from '../../api/openapi/document';
import { startTestApi, type TestApi } from '../support/api';
import { documentedAnswers } from '../support/openapi';
import { insertCompany } from '../listings/support';
import { partnerApp } from './support';

/** The exact body a row holds for `company` (what the attempt sends: envelopeBody). */
export const bodyFor = (company: string, eventId: string): string => {
  const event = structuredClone(candidateNew) as any;
  event.event_id = eventId;
  event.data.company.id = company;
  return envelopeBody(toEnvelope(event));
};

export interface SeededWebhook {
  readonly id: string;
  readonly eventId: string;
  readonly body: string;
}

/** One webhook row of `company` created at `createdAt`; `columns` override any column. */
export async function seedWebhook(
  knex: Knex,
  company: string | null,
  createdAt: Date,
  columns: Record<string, unknown> = {},
): Promise<SeededWebhook> {
  const id = randomUUID();
  const eventId = `seed-${id}`;
  const body = bodyFor(company ?? 'none', eventId);
  await knex('webhook_events').insert({
    id,
    event_id: eventId,
    event_type: 'candidate',
    action: 'new',
    company_id: company,
    body,
    workflow_id: `webhook-${id}`,
    run_id: randomUUID(),
    status: 'pending',
    created_at: createdAt,
    accepted_at: createdAt,
    ...columns,
  });
  return { id, eventId, body };
}

/** One recorded attempt of `webhookId`. */
export async function seedAttempt(
  knex: Knex,
  webhookId: string,
  attempt: number,
  columns: { startedAt: Date; durationMs: number; httpStatus?: number; errorClass?: string; excerpt?: string },
): Promise<void> {
  await knex('webhook_attempts').insert({
    webhook_id: webhookId,
    attempt,
    scheduled_at: columns.startedAt,
    started_at: columns.startedAt,
    duration_ms: columns.durationMs,
    http_status: columns.httpStatus ?? null,
    error_class: columns.errorClass ?? null,
    response_body: columns.excerpt ?? null,
    succeeded: columns.httpStatus !== undefined && columns.httpStatus < 300,
  });
  await knex('webhook_events').where({ id: webhookId }).update({ claimed_attempt: attempt });
}

/** Places `webhookIds` in order in the lane of `key` (made under the deployment's index key), from sequence 1. */
export async function seedLane(knex: Knex, key: string, webhookIds: readonly string[]): Promise<number> {
  const indexKeys = await indexKeysOf(knex, dataAtRest(loadConfig({})));
  const [lane] = await knex('ordering_lanes')
    .insert({
      key_digest: laneDigest(indexKeys.writeWith, key),
      key_text: key,
      index_key_id: indexKeys.writeWith.id,
      last_seq: webhookIds.length,
    })
    .returning('id');
  await knex('ordering_places').insert(
    webhookIds.map((webhookId, i) => ({ webhook_id: webhookId, lane_id: lane.id, seq: i + 1 })),
  );
  return lane.id;
}

export const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

/** The real API on a fresh database with `companies`, an app `appId` with deliveries:read granted `granted`. */
export async function startReadApi(
  companies: readonly string[],
  appId: string,
  granted: string[],
): Promise<{ stack: TestApi; base: string; headers: Record<string, string> }> {
  const stack = await startTestApi();
  for (const company of companies) await insertCompany(stack.db.knex, company);
  const { headers } = await partnerApp(stack.db.knex, appId, granted, ['deliveries:read']);
  return { stack, base: stack.api.url, headers };
}

/** Asserts that a real answer is documented, as the document built from the default configuration states it. */
export const documented = documentedAnswers(openApiDocument(loadConfig({})));
