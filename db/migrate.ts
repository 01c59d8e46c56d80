import type { Knex } from 'knex';
import { migrations } from './migrations';

const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => migrations.map(([name]) => name),
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const found = migrations.find(([candidate]) => candidate === name);
    if (!found) throw new Error(`Unknown migration ${name}`);
    return found[1];
  },
};

const config: Knex.MigratorConfig = { migrationSource, tableName: 'knex_migrations' };

/** Applies pending migrations; returns the names applied. */
export async function migrateLatest(knex: Knex): Promise<string[]> {
  const [, applied] = await knex.migrate.latest(config);
  return applied as string[];
}

/** Applies the next pending migration only; returns its name (none when nothing is pending). */
export async function migrateUp(knex: Knex): Promise<string[]> {
  const [, applied] = await knex.migrate.up(config);
  return applied as string[];
}

/** Rolls back every applied migration; returns the names rolled back. */
export async function migrateRollbackAll(knex: Knex): Promise<string[]> {
  const [, rolledBack] = await knex.migrate.rollback(config, true);
  return rolledBack as string[];
}

export async function pendingMigrations(knex: Knex): Promise<string[]> {
  const [, pending] = await knex.migrate.list(config);
  return (pending as Array<{ file: string } | string>).map((m) => (typeof m === 'string' ? m : m.file));
}
