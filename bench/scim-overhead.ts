// Where the SCIM API's cost over its baseline comes from, between benchmark runs:
// `npx tsx bench/scim-overhead.ts [query name, as in bench/scim-queries.ts] [rounds]`
// against the directory kept in .prof/ (see scim-profile-db.ts). The baseline's work (the precompiled
// statements, rows as JSON) runs on bare node:http or Koa, with a bare pg pool or knex's pool, beside the
// real API; each is driven in turn, round after round, and the table gives each one's median CPU µs per
// request, GC pauses per request and req/s. The steps from `http+pg` (the baseline) to the API are the
// framework, the pool and the SCIM work (routing, filter parsing, serialising, the larger response).
import { planList } from '../api/scim/engine/handlers';
import { drive } from './load';
import { cpuSeconds } from './proc-stats';
import { quantiles } from './quantiles';
import { withProfileDirectory } from './scim-profile-db';
import { apiPath, benchQueryNamed } from './scim-queries';
import { BENCH_RESOURCES } from './scim-resources';
import { startServerChild, type ServerChild } from './server-child';

const STACKS = ['http+pg', 'http+knex', 'koa+pg', 'koa+knex'] as const;
const CONNECTIONS = 8;
const SECONDS = 5;

async function main(name = 'users-membership-check', rounds = Number(process.argv[3] ?? 3)) {
  const benchQuery = benchQueryNamed(name);
  const { endpoint, query } = benchQuery;
  const plan = { endpoint, request: planList(BENCH_RESOURCES[endpoint].resource, query, 'http://127.0.0.1/scim/v2').request };
  await withProfileDirectory(async (databaseUrl) => {
    const servers: Array<{ name: string; url: string; child: ServerChild }> = [];
    try {
      for (const stack of STACKS) {
        const env = { DATABASE_URL: databaseUrl, SCIM_BENCH_QUERIES: JSON.stringify({ q: plan }), SCIM_BASELINE_STACK: stack };
        const child = await startServerChild('scim-baseline-server', env);
        servers.push({ name: stack === 'http+pg' ? 'http+pg (the baseline)' : stack, url: `${child.url}/q`, child });
      }
      const api = await startServerChild('api-process', { DATABASE_URL: databaseUrl });
      servers.push({ name: 'API', url: `${api.url}${apiPath(benchQuery)}`, child: api });

      const headers = { accept: 'application/json' };
      for (const server of servers) await drive(server.url, headers, CONNECTIONS, 2); // warm-up
      const cpu = new Map<string, number[]>(servers.map((s) => [s.name, []]));
      const gcPauses = new Map<string, number[]>(servers.map((s) => [s.name, []]));
      const rates = new Map<string, number[]>(servers.map((s) => [s.name, []]));
      for (let round = 0; round < rounds; round++) {
        for (const server of servers) {
          const before = { cpu: cpuSeconds(server.child.pid), gcPauseMs: await server.child.gcPauseMs() };
          const load = await drive(server.url, headers, CONNECTIONS, SECONDS);
          if (load.non2xx || load.errors) throw new Error(`${server.name}: ${load.non2xx} non-2xx, ${load.errors} errors`);
          cpu.get(server.name)!.push(((cpuSeconds(server.child.pid) - before.cpu) * 1e6) / load.requests);
          gcPauses.get(server.name)!.push((((await server.child.gcPauseMs()) - before.gcPauseMs) * 1e3) / load.requests);
          rates.get(server.name)!.push(load.reqPerSec);
        }
      }
      const median = (values: number[]) => quantiles(values).p50;
      const base = median(cpu.get(servers[0].name)!);
      process.stdout.write(
        [
          `${name}: ${CONNECTIONS} connections, ${rounds} rounds of ${SECONDS} s each; medians.`,
          '',
          '| Server | CPU µs per request | over the baseline | GC pauses µs per request | req/s |',
          '|---|---:|---:|---:|---:|',
          ...servers.map((s) => {
            const us = median(cpu.get(s.name)!);
            const difference = Math.round(us - base);
            const over = s === servers[0] ? '' : `${difference > 0 ? '+' : difference < 0 ? '−' : '±'}${Math.abs(difference)}`;
            return `| ${s.name} | ${us.toFixed(0)} | ${over} | ${median(gcPauses.get(s.name)!).toFixed(1)} | ${median(rates.get(s.name)!).toFixed(0)} |`;
          }),
          '',
        ].join('\n'),
      );
    } finally {
      for (const server of servers) await server.child.stop();
    }
  });
}

void main(process.argv[2]);
