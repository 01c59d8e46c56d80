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

/**
 * A database of its own for the enclosing `describe`: created in a `before` hook and dropped in an `after`
 * hook. Its fields can be read inside hooks and tests only.
 */
export function useTestDatabase({ empty = false }: { empty?: boolean } = {}): TestDatabase {
  let current: TestDatabase | undefined;
  before(async () => {
    current = await (empty ? createEmptyDatabase() : createTestDatabase());
  });
  after(async () => current?.drop());
  const ready = (): TestDatabase => {
    if (!current) throw new Error('useTestDatabase: the database exists only inside hooks and tests');
    return current;
  };
  return {
    get url() {
      return ready().url;
    },
    get knex() {
      return ready().knex;
    },
    drop: () => ready().drop(),
  };
}
