import pg from 'pg';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createKnex, ensureDatabase, type Knex } from '../../db/database';
import { startEmbeddedPostgres } from '../../db/embedded-postgres';
import { migrateLatest } from '../../db/migrate';
import { registerDevelopmentIndexKey } from '../../store/personal-data/subject-index-keys';
import { raw, runSql } from '../../db/sql';

/** The PostgreSQL server benchmarks run on: BENCH_DATABASE_URL's, or an embedded one in a temporary directory. */
export async function startBenchPostgres(): Promise<{ url: string; stop(): Promise<void> }> {
  const url = process.env.BENCH_DATABASE_URL;
  if (url) return { url, stop: async () => undefined };
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'pis-bench-pg-'));
  try {
    const server = await startEmbeddedPostgres(path.join(tempDir, 'data'));
    return { url: server.url, stop: () => server.stop().then(() => rm(tempDir, { recursive: true, force: true })) };
  } catch (error) {
    await rm(tempDir, { recursive: true, force: true });
    throw error;
  }
}

/** Runs `body` on the migrated database `bench_<name>` of that server (created when missing). */
export async function withBenchDatabase<T>(
  serverUrl: string,
  name: string,
  body: (db: { databaseUrl: string; knex: Knex }) => Promise<T>,
): Promise<T> {
  const databaseUrl = await ensureDatabase(serverUrl, `bench_${name.replace(/\W/g, '_')}`);
  const knex = createKnex(databaseUrl);
  try {
    await migrateLatest(knex);
    // A development deployment, as `partner-service start` makes one: the bench's processes run without index keys.
    await registerDevelopmentIndexKey(knex);
    return await body({ databaseUrl, knex });
  } finally {
    await knex.destroy();
  }
}

/**
 * Runs `body` on a new, empty database of that server and drops it afterwards: for a build of earlier code,
 * whose `start` migrates it with that code's own migrations.
 */
export async function withEmptyDatabase<T>(
  serverUrl: string,
  name: string,
  body: (db: { databaseUrl: string; knex: Knex }) => Promise<T>,
): Promise<T> {
  const databaseName = `bench_${name.replace(/\W/g, '_')}_${Date.now().toString(36)}`;
  const databaseUrl = await ensureDatabase(serverUrl, databaseName);
  const knex = createKnex(databaseUrl);
  try {
    return await body({ databaseUrl, knex });
  } finally {
    await knex.destroy();
    const admin = createKnex(serverUrl, { min: 0, max: 1 });
    await runSql(admin, raw(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(databaseName)} WITH (FORCE)`)).finally(() =>
      admin.destroy(),
    );
  }
}
