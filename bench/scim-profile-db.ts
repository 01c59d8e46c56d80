import path from 'node:path';
import { createKnex, ensureDatabase } from '../db/database';
import { startEmbeddedPostgres } from '../db/embedded-postgres';
import { migrateLatest } from '../db/migrate';
import { SCIM_BENCH_GROUPS, seedScimDirectory } from './scim-seed';

/**
 * The SCIM bench directory in an embedded PostgreSQL kept in .prof/ (seeded once), for diagnostics run
 * between benchmark runs, so runs after a change compare quickly. Gives its URL to `use`, then stops.
 */
export async function withProfileDirectory(use: (databaseUrl: string) => Promise<void>): Promise<void> {
  const pg = await startEmbeddedPostgres(path.resolve('.prof', 'pg'));
  try {
    const url = await ensureDatabase(pg.url, 'scim_profile');
    const knex = createKnex(url);
    try {
      await migrateLatest(knex);
      const [{ n }] = await knex('scim_groups').count({ n: '*' });
      if (Number(n) < SCIM_BENCH_GROUPS) await seedScimDirectory(knex);
    } finally {
      await knex.destroy();
    }
    await use(url);
  } finally {
    await pg.stop();
  }
}
