import pg from 'pg';
import { createKnex, type Knex } from '../../db/database';
import { TEMPLATE_DATABASE, testServerUrl, withDatabaseName } from './global-fixtures';

let counter = 0;

export interface TestDatabase {
  readonly url: string;
  readonly knex: Knex;
  drop(): Promise<void>;
}

/** A fresh database cloned from the migrated template, private to the calling test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `pis_test_${process.pid}_${++counter}`;
  const admin = new pg.Client({ connectionString: testServerUrl() });
  await admin.connect();
  try {
    await admin.query(
      `CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(TEMPLATE_DATABASE)}`,
    );
  } finally {
    await admin.end();
  }
  const url = withDatabaseName(testServerUrl(), name);
  const knex = createKnex(url);
  return {
    url,
    knex,
    async drop() {
      await knex.destroy();
      const dropper = new pg.Client({ connectionString: testServerUrl() });
      await dropper.connect();
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await dropper.end();
      }
    },
  };
}

/** An empty database on the test server, not migrated: for migration tests. */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const name = `pis_empty_${process.pid}_${++counter}`;
  const admin = new pg.Client({ connectionString: testServerUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  await admin.end();
  const url = withDatabaseName(testServerUrl(), name);
  const knex = createKnex(url);
  return {
    url,
    knex,
    async drop() {
      await knex.destroy();
      const dropper = new pg.Client({ connectionString: testServerUrl() });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      await dropper.end();
    },
  };
}
