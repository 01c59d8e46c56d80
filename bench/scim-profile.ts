// Profiles the SCIM API process under load: `npx tsx bench/scim-profile.ts` against a persistent embedded
// PostgreSQL in .prof/ (seeded once), so frames can be compared after each change.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createKnex, ensureDatabase } from '../db/database';
import { startEmbeddedPostgres } from '../db/embedded-postgres';
import { migrateLatest } from '../db/migrate';
import { topSelfTime } from './cpu-profile';
import { planList } from '../api/scim/engine/handlers';
import { groupResource } from '../api/scim/groups/resource';
import { drive } from './load';
import { startServerChild } from './server-child';
import { benchGroupId, benchMemberUser, SCIM_BENCH_GROUPS, seedScimDirectory } from './scim-seed';

async function main() {
  const pg = await startEmbeddedPostgres(path.resolve('.prof', 'pg'));
  const url = await ensureDatabase(pg.url, 'scim_profile');
  const knex = createKnex(url);
  await migrateLatest(knex);
  const [{ n }] = await knex('scim_groups').count({ n: '*' });
  if (Number(n) < SCIM_BENCH_GROUPS) await seedScimDirectory(knex);
  await knex.destroy();
  const member = benchMemberUser(42_317, 3);
  const presets: Record<string, Record<string, string>> = {
    page: { count: '100', excludedAttributes: 'members' },
    members: { filter: `members[value eq "${member}"]` },
    membership: { filter: `id eq "${benchGroupId(42_317)}" and members eq "${member}"` },
    'display-co': { filter: 'displayName co "4231"' },
  };
  const query = new URLSearchParams(presets[process.argv[2] ?? 'page']).toString();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'scim-prof-'));
  const plan = planList(groupResource, Object.fromEntries(new URLSearchParams(query)), 'http://127.0.0.1/scim/v2').request;
  const baseline = await startServerChild('scim-baseline-server', { DATABASE_URL: url, SCIM_BENCH_QUERIES: JSON.stringify({ q: plan }) }, process.env.PROFILE_BASELINE ? ['--cpu-prof', `--cpu-prof-dir=${dir}-baseline`] : []);
  console.log('baseline bytes', (await (await fetch(`${baseline.url}/q`)).text()).length);
  const base = await drive(`${baseline.url}/q`, {}, 8, Number(process.env.SECONDS ?? 8));
  await baseline.stop();
  console.log(JSON.stringify({ baselineReqPerSec: Math.round(base.reqPerSec), p50: base.p50Ms }));
  const api = await startServerChild('api-process', { DATABASE_URL: url }, process.env.PROFILE === '0' ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const target = `${api.url}/scim/v2/Groups?${query}`;
  console.log('api bytes', (await (await fetch(target)).text()).length);
  await drive(target, { accept: 'application/json' }, 8, 1);
  const figures = await drive(target, { accept: 'application/json' }, 8, Number(process.env.SECONDS ?? 8));
  await api.stop();
  const profile = await topSelfTime(dir, 25);
  console.log(JSON.stringify({ reqPerSec: Math.round(figures.reqPerSec), p50: figures.p50Ms }));
  for (const f of profile.top) console.log(`${((f.selfMs / profile.busyMs) * 100).toFixed(1).padStart(5)} %  ${f.name}  ${f.location}`);
  if (process.env.KEEP) console.log('profile in', dir);
  else await rm(dir, { recursive: true, force: true });
  await pg.stop();
}

void main();
