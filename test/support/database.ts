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
export function createTestDatabase(): Promise<TestDatabase> {
  return createDatabase('test', TEMPLATE_DATABASE);
}

/** An empty database on the test server, not migrated: for migration tests. */
export function createEmptyDatabase(): Promise<TestDatabase> {
  return createDatabase('empty');
}

async function createDatabase(kind: string, template?: string): Promise<TestDatabase> {
  const name = `pis_${kind}_${process.pid}_${++counter}`;
  const templateClause = template ? ` TEMPLATE ${pg.escapeIdentifier(template)}` : '';
  await onServer(`CREATE DATABASE ${pg.escapeIdentifier(name)}${templateClause}`);
  const url = withDatabaseName(testServerUrl(), name);
  const knex = createKnex(url);
  return {
    url,
    knex,
    async drop() {
      await knex.destroy();
      await onServer(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    },
  };
}

async function onServer(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: testServerUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}
