import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createKnex, ensureDatabase, withDatabaseName } from '../../db/database';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../db/embedded-postgres';
import { migrateLatest } from '../../db/migrate';
import { registerDevelopmentIndexKey } from '../../store/personal-data/subject-index-keys';

/**
 * Mocha global fixtures: one PostgreSQL server for the run (TEST_DATABASE_URL's, or an embedded one),
 * and one migrated template database that every test file clones.
 */
let embedded: EmbeddedPostgresHandle | undefined;
let tempDir: string | undefined;

export const TEMPLATE_DATABASE = `pis_template_${process.pid}`;

export async function mochaGlobalSetup(): Promise<void> {
  let serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    tempDir = await mkdtemp(path.join(os.tmpdir(), 'pis-test-pg-'));
    embedded = await startEmbeddedPostgres(path.join(tempDir, 'data'));
    serverUrl = embedded.url;
  }
  process.env.PIS_TEST_SERVER_URL = serverUrl;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(TEMPLATE_DATABASE)}`);
  await admin.end();
  const templateUrl = await ensureDatabase(serverUrl, TEMPLATE_DATABASE);
  const knex = createKnex(templateUrl);
  try {
    await migrateLatest(knex);
    // Every test database is a development deployment (partner-service start's), unless a test says otherwise.
    await registerDevelopmentIndexKey(knex);
  } finally {
    await knex.destroy();
  }
}

export async function mochaGlobalTeardown(): Promise<void> {
  const serverUrl = process.env.PIS_TEST_SERVER_URL;
  if (serverUrl && !embedded) {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    const { rows } = await admin.query('SELECT datname FROM pg_database WHERE datname LIKE $1', [
      `pis_%_${process.pid}%`,
    ]);
    for (const { datname } of rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    }
    await admin.end();
  }
  await embedded?.stop();
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
}

export function testServerUrl(): string {
  const url = process.env.PIS_TEST_SERVER_URL;
  if (!url) throw new Error('The mocha global fixtures have not started PostgreSQL');
  return url;
}

export { withDatabaseName };
