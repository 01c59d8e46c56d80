// Where the SCIM API's CPU goes under load, between benchmark runs:
// `npx tsx bench/scim-profile.ts [page|members|users-membership]`
// against an embedded PostgreSQL kept in .prof/ (seeded once, so runs after a change compare quickly).
import path from 'node:path';
import { createKnex, ensureDatabase } from '../db/database';
import { startEmbeddedPostgres } from '../db/embedded-postgres';
import { migrateLatest } from '../db/migrate';
import { profileApiUnderLoad, profileTable } from './api-profile';
import { benchGroupId, benchMemberUser, SCIM_BENCH_GROUPS, seedScimDirectory } from './scim-seed';

const PRESETS: Record<string, string> = {
  page: `/Groups?${new URLSearchParams({ count: '100', excludedAttributes: 'members' })}`,
  members: `/Groups?${new URLSearchParams({ filter: `members[value eq "${benchMemberUser(42_317, 3)}"]` })}`,
  'users-membership': `/Users?${new URLSearchParams({ filter: `id eq "${benchMemberUser(42_317, 3)}" and groups.value eq "${benchGroupId(42_317)}"` })}`,
};

async function main(preset = 'page') {
  const pg = await startEmbeddedPostgres(path.resolve('.prof', 'pg'));
  try {
    const url = await ensureDatabase(pg.url, 'scim_profile');
    const knex = createKnex(url);
    await migrateLatest(knex);
    const [{ n }] = await knex('scim_groups').count({ n: '*' });
    if (Number(n) < SCIM_BENCH_GROUPS) await seedScimDirectory(knex);
    await knex.destroy();
    const profiled = await profileApiUnderLoad(url, `/scim/v2${PRESETS[preset]}`, 8, Number(process.env.SECONDS ?? 8), 20);
    process.stdout.write(`${Math.round(profiled.load.reqPerSec)} req/s under the profiler\n\n${profileTable(profiled, preset)}\n`);
  } finally {
    await pg.stop();
  }
}

void main(process.argv[2]);
