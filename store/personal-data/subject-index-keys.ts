import type { Knex } from 'knex';
import { prepared, runSql, sql } from '../../db/sql';
import { DEVELOPMENT_INDEX_KEY, type DataAtRest } from '../../lib/at-rest';
import {
  decideIndexKeys,
  indexKeyFingerprint,
  type IndexKeys,
  type RegisteredIndexKey,
  type SubjectIndexKey,
} from '../../lib/subject-index';

// The deployment's subject index keys (`subject_index_keys`: ids and fingerprints, never keys), and the keys one
// process may use under them (lib/subject-index.ts decideIndexKeys).

/** How long a process trusts its last look: a key registered or retired elsewhere is seen within this time. */
const LOOK_AGAIN_MS = 30_000;

export async function registeredIndexKeys(knex: Knex): Promise<RegisteredIndexKey[]> {
  const rows = await runSql<{ key_id: string; fingerprint: string; retired: boolean }>(
    knex,
    prepared(
      'read-subject-index-keys',
      sql`SELECT key_id, fingerprint, retired_at IS NOT NULL AS retired
      FROM subject_index_keys ORDER BY registered_at, key_id`,
    ),
  );
  return rows.map((row) => ({ id: row.key_id, fingerprint: row.fingerprint, retired: row.retired }));
}

/**
 * Records that the deployment indexes under `key`; a no-op when its id is registered already (a retired key stays
 * retired).
 */
export async function registerIndexKey(knex: Knex, key: SubjectIndexKey): Promise<void> {
  await runSql(
    knex,
    sql`INSERT INTO subject_index_keys (key_id, fingerprint)
    VALUES (${key.id}, ${indexKeyFingerprint(key)}) ON CONFLICT (key_id) DO NOTHING`,
  );
}

/**
 * Makes a deployment that has never had an index key a development one: `partner-service start` without
 * SUBJECT_INDEX_KEYS indexes with the public development key. A deployment with a key of its own is left as it is.
 */
export async function registerDevelopmentIndexKey(knex: Knex): Promise<void> {
  await runSql(
    knex,
    sql`INSERT INTO subject_index_keys (key_id, fingerprint)
        SELECT ${DEVELOPMENT_INDEX_KEY.id}, ${indexKeyFingerprint(DEVELOPMENT_INDEX_KEY)}
          WHERE NOT EXISTS (SELECT 1 FROM subject_index_keys)
        ON CONFLICT (key_id) DO NOTHING`,
  );
}

/** Marks keys no row is indexed under any more as retired: a process no longer needs to list them. */
export async function retireIndexKeys(knex: Knex, ids: readonly string[]): Promise<void> {
  await runSql(
    knex,
    sql`UPDATE subject_index_keys SET retired_at = now() WHERE key_id = ANY(${ids}::text[]) AND retired_at IS NULL`,
  );
}

const looked = new WeakMap<Knex, WeakMap<DataAtRest, { keys: IndexKeys; at: number }>>();

/**
 * The keys this process indexes and searches with, checked against the deployment's (SubjectIndexKeyError when it
 * may not), its newest key registered on first use. `fresh` looks again now (an erasure's request does).
 */
export async function indexKeysOf(knex: Knex, atRest: DataAtRest, { fresh = false } = {}): Promise<IndexKeys> {
  const byConfig = looked.get(knex) ?? new WeakMap();
  looked.set(knex, byConfig);
  const last = byConfig.get(atRest);
  if (last && !fresh && Date.now() - last.at < LOOK_AGAIN_MS) return last.keys;
  let registered = await registeredIndexKeys(knex);
  const [newest] = atRest.subjectKeys;
  if (newest && !registered.some((key) => key.id === newest.id)) {
    await registerIndexKey(knex, newest);
    registered = await registeredIndexKeys(knex);
  }
  const keys = decideIndexKeys(registered, atRest.subjectKeys, DEVELOPMENT_INDEX_KEY);
  byConfig.set(atRest, { keys, at: Date.now() });
  return keys;
}
