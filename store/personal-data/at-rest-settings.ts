import type { Knex } from 'knex';
import { prepared, runSql, sql } from '../../db/sql';
import { type DataAtRest } from '../../lib/at-rest';
import { EncryptionRequiredError } from '../../lib/errors';

// Whether this deployment is keyed: PostgreSQL records when a process with PAYLOAD_ENCRYPTION_KEYS first
// started (migration 019), and a process without keys then writes no body or excerpt in clear.

/**
 * A database not migrated to 019 yet (`migrate` and the worker open it before migrating, or without): undefined_table.
 */
const notMigratedYet = (error: unknown) => (error as { code?: string } | null)?.code === '42P01';

/**
 * Records that the deployment is keyed, once; later calls change nothing. Before migration 019, the next start records
 * it.
 */
export async function recordEncryptedSince(knex: Knex): Promise<void> {
  await runSql(knex, sql`INSERT INTO data_at_rest_settings DEFAULT VALUES ON CONFLICT DO NOTHING`).catch(
    (error: unknown) => {
      if (!notMigratedYet(error)) throw error;
    },
  );
}

/** When the deployment became keyed, or null. A database not migrated to 019 yet is not keyed. */
async function readEncryptedSince(knex: Knex): Promise<Date | null> {
  try {
    const [row] = await runSql<{ encrypted_since: Date }>(
      knex,
      prepared('read-keyed-fact', sql`SELECT encrypted_since FROM data_at_rest_settings`),
    );
    return row?.encrypted_since ?? null;
  } catch (error) {
    if (notMigratedYet(error)) return null;
    throw error;
  }
}

/**
 * How long a process without keys trusts an "unset" answer before asking again: it costs an unkeyed deployment
 * one primary-key read a second per process, and bounds how long a keyless process may write in clear after the
 * first keyed one started (the start report counts such rows; `keys reseal` seals them).
 */
const UNSET_FOR_MS = 1_000;
/** Per database (a knex instance): a set fact is kept for the process's life, since it is never unset. */
const known = new WeakMap<Knex, { keyedSince?: Date; unsetUntil: number }>();

/** Throws EncryptionRequiredError when this process has no keys and the deployment is keyed; else nothing. */
export async function refuseClearWriteIfKeyed(knex: Knex, atRest: DataAtRest): Promise<void> {
  if (atRest.keys.length) return;
  let fact = known.get(knex);
  if (!fact?.keyedSince && Date.now() >= (fact?.unsetUntil ?? 0)) {
    fact = { keyedSince: (await readEncryptedSince(knex)) ?? undefined, unsetUntil: Date.now() + UNSET_FOR_MS };
    known.set(knex, fact);
  }
  if (fact?.keyedSince) throw new EncryptionRequiredError(fact.keyedSince);
}
