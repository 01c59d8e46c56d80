import path from 'node:path';
import { request } from 'undici';
import { drive, type LoadFigures } from '../harness/load';
import { table, verdict } from '../harness/render';
import { startApiChild, startServerChild, type ServerChild } from '../harness/server-child';
import { explain, statementsOf } from '../harness/statements';
import type { BenchmarkSuite } from '../harness/suite';
import {
  BENCH_APP,
  BENCH_USERS,
  BIG_COMPANY,
  BIG_COMPANY_JOBS,
  BIG_COMPANY_MEMBERS,
  JOBS,
  USERS_PER_BIG_JOB,
  seedListingDirectory,
} from './seed';

const CONNECTIONS = 32;
const SECONDS = 10;
const WARMUP_SECONDS = 2;
const PAGE_SIZE = 50;
/** Page 1801 starts at offset 90,000; the benchmark reaches it through page 1800's `next` link. */
const DEEP_PAGE = 1801;
const HEADERS = { 'X-App-Id': BENCH_APP.appId, 'X-App-Key': BENCH_APP.key };

interface Row {
  readonly scenario: string;
  readonly server: string;
  readonly figures: LoadFigures;
}

/** The part of a listing page the bench checks. */
interface ListingPage {
  readonly count: number;
  readonly next: string;
  readonly results: ReadonlyArray<{ readonly id: number }>;
}

async function getJson(url: string): Promise<ListingPage> {
  const res = await request(url, { headers: HEADERS });
  const body = (await res.body.json()) as ListingPage;
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${JSON.stringify(body)}`);
  return body;
}

/** Big-company member ids are the odd numbers, so the user at offset n has id 2n + 1. */
function checkPage(body: ListingPage, offset: number): void {
  const first = body.results[0]?.id;
  if (body.count !== BIG_COMPANY_MEMBERS || body.results.length !== PAGE_SIZE || first !== 2 * offset + 1) {
    throw new Error(
      `unexpected page at offset ${offset}: count ${body.count}, ${body.results.length} results, first id ${first}`,
    );
  }
}

export const listingsSuite: BenchmarkSuite = {
  name: 'listings',
  title: 'REST user listings',
  async run({ knex, databaseUrl, progress }) {
    progress('listings: seeding 200k users, a 100k-member company and 20k jobs');
    const seedStarted = performance.now();
    await seedListingDirectory(knex);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const servers: ServerChild[] = [];
    try {
      const api = await startApiChild(databaseUrl);
      servers.push(api);
      const first = `/v1/companies/${BIG_COMPANY}/users/`;
      checkPage(await getJson(`${api.url}${first}`), 0);
      const next = new URL((await getJson(`${api.url}${first}?page=${DEEP_PAGE - 1}`)).next);
      const deep = `${next.pathname}${next.search}`;
      checkPage(await getJson(`${api.url}${deep}`), (DEEP_PAGE - 1) * PAGE_SIZE);
      const job = '/v1/jobs/job-1/users/';
      // What the API runs for each (the access check, then the kept count with the page), for the baseline and the plans.
      const [firstSql, deepSql, jobSql] = await statementsOf(knex, databaseUrl, [first, deep, job], HEADERS);
      const counts = [firstSql, deepSql, jobSql].map((statements) => statements.length);
      if (counts.some((n) => n !== 2))
        throw new Error(`the API ran ${counts.join(', ')} statements for a page, not the access check and the page`);
      progress('listings: EXPLAIN ANALYZE');
      const plans = [];
      for (const [label, statement] of [
        ['Access check (company listing)', firstSql[0]],
        ['First company page: kept count + page', firstSql[1]],
        [`Deep page ${DEEP_PAGE} via the \`next\` cursor: kept count + keyset page`, deepSql[1]],
        ['First job page: kept count + page of the union', jobSql[1]],
      ] as const)
        plans.push(`#### ${label}`, '', (await explain(knex, statement)).block, '');
      const routes = JSON.stringify({ first: firstSql, deep: deepSql });
      const baseline = await startServerChild(path.join(__dirname, 'baseline-server'), {
        DATABASE_URL: databaseUrl,
        LISTINGS_ROUTES: routes,
      });
      servers.push(baseline);
      checkPage(await getJson(`${baseline.url}/first`), 0);
      checkPage(await getJson(`${baseline.url}/deep`), (DEEP_PAGE - 1) * PAGE_SIZE);
      const scenarios: Array<[scenario: string, server: string, url: string]> = [
        ['first company page', 'API', `${api.url}${first}`],
        ['first company page', 'baseline', `${baseline.url}/first`],
        [`deep page ${DEEP_PAGE} (offset 90,000) via next-link cursor`, 'API', `${api.url}${deep}`],
        [`deep page ${DEEP_PAGE} (offset 90,000) via keyset`, 'baseline', `${baseline.url}/deep`],
        [`deep page ${DEEP_PAGE} via ?page=${DEEP_PAGE} (offset scan)`, 'API', `${api.url}${first}?page=${DEEP_PAGE}`],
        ['first job page (union of job roles and company admins)', 'API', `${api.url}${job}`],
      ];
      for (const url of [scenarios[0][2], scenarios[1][2]]) {
        progress(`listings: warm-up ${url}`);
        await drive(url, HEADERS, CONNECTIONS, WARMUP_SECONDS);
      }
      const rows: Row[] = [];
      for (const [scenario, server, url] of scenarios) {
        progress(`listings: ${server} ${scenario}, ${CONNECTIONS} connections, ${SECONDS} s`);
        rows.push({ scenario, server, figures: await drive(url, HEADERS, CONNECTIONS, SECONDS) });
      }
      const [apiRss, baselineRss] = await Promise.all([api.peakRss(), baseline.peakRss()]);
      return report(rows, { apiRss, baselineRss, seedSeconds, plans });
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
    }
  },
};

const ms = (value: number) => value.toFixed(1);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function report(
  rows: Row[],
  {
    apiRss,
    baselineRss,
    seedSeconds,
    plans,
  }: { apiRss: number; baselineRss: number; seedSeconds: number; plans: string[] },
): string {
  const [apiFirst, baselineFirst, apiDeep] = rows.map((row) => row.figures);
  const ratio = apiFirst.reqPerSec / baselineFirst.reqPerSec;
  const depth = apiDeep.p50Ms / apiFirst.p50Ms;
  const failures = rows.reduce((sum, row) => sum + row.figures.non2xx + row.figures.errors, 0);
  return [
    `Directory (set-based SQL, ${seedSeconds.toFixed(1)} s): ${BENCH_USERS.toLocaleString('en')} users; company \`${BIG_COMPANY}\` with ` +
      `${BIG_COMPANY_MEMBERS.toLocaleString('en')} members (every odd user id); ${JOBS.toLocaleString('en')} jobs, ` +
      `${BIG_COMPANY_JOBS.toLocaleString('en')} of them in \`${BIG_COMPANY}\` with ${USERS_PER_BIG_JOB} explicit job users each. ` +
      `Load: autocannon, ${CONNECTIONS} keep-alive connections, ${SECONDS} s per row after a ${WARMUP_SECONDS} s warm-up, over 127.0.0.1, ` +
      `page size ${PAGE_SIZE}. Each server runs in its own process; both use a pool of 10 PostgreSQL connections.`,
    '',
    'The API is `api/server.ts` (Koa, knex, X-App-Id/X-App-Key check, links with cursors). The baseline is bare `node:http` + `pg` ' +
      "running the very statements the API ran for the same page (taken from the API through knex's `query` event): the access check, " +
      'then one statement reading the kept count and the page; the same user objects, no framework, links or error handling. The count is ' +
      'the row of `company_listing_counts` / `job_listing_counts` that statement-level triggers keep exact (migration 009).',
    '',
    table(
      ['scenario', 'server', '>req/s', '>p50 ms', '>p99 ms', '>non-2xx', '>errors'],
      rows.map(({ scenario, server, figures: f }) => [
        scenario,
        server,
        f.reqPerSec.toFixed(0),
        ms(f.p50Ms),
        ms(f.p99Ms),
        f.non2xx,
        f.errors,
      ]),
    ),
    '',
    `Peak RSS: API process ${mib(apiRss)}, baseline process ${mib(baselineRss)}.`,
    '',
    table(
      ['goal', 'measured', ''],
      [
        [
          `p50 of the first company page ≤ 15 ms, ${CONNECTIONS} connections, ${BIG_COMPANY_MEMBERS.toLocaleString('en')} members`,
          `${ms(apiFirst.p50Ms)} ms`,
          verdict(apiFirst.p50Ms <= 15),
        ],
        [
          'p50 of the deep page via `next` ≤ 1.5 × p50 of the first page',
          `${ms(apiDeep.p50Ms)} ms vs ${ms(apiFirst.p50Ms)} ms = ${depth.toFixed(2)} ×`,
          verdict(depth <= 1.5),
        ],
        [
          `API ≥ 0.8 × baseline req/s, first page, ${CONNECTIONS} connections`,
          `${ratio.toFixed(2)} ×`,
          verdict(ratio >= 0.8),
        ],
        ['no non-2xx responses or errors under load', failures, verdict(failures === 0)],
      ],
    ),
    '',
    '### Query plans (EXPLAIN ANALYZE of each statement the API runs)',
    '',
    ...plans,
  ].join('\n');
}
