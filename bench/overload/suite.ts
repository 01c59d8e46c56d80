import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { loadConfig } from '../../lib/config';
import { withCleanups } from '../harness/cleanups';
import { startPartnerServer, type PartnerServer } from '../harness/partner';
import { table, verdict } from '../harness/render';
import { quantiles } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { benchTemporalBinary } from '../harness/temporal';
import {
  benchEvent,
  ingest,
  INTERNAL_API_TOKEN,
  startServiceRig,
  waitForHealthz,
  waitUntil,
  type Rig,
} from '../harness/webhook-part';

/** Callers at once, the seconds each level lasts (BENCH_OVERLOAD_SECONDS), and the goal: p99 of the 202s at 512 ≤ 2 × at 128. */
const LEVELS = [32, 128, 512] as const;
const SECONDS = Number(process.env.BENCH_OVERLOAD_SECONDS ?? 30);
const GOAL_P99_RATIO = 2;
/** The api's bound in force: its default, or INGEST_MAX_STARTS_IN_FLIGHT as set for the run (the services inherit the environment). */
const BOUND = loadConfig({
  INGEST_MAX_STARTS_IN_FLIGHT: process.env.INGEST_MAX_STARTS_IN_FLIGHT,
}).INGEST_MAX_STARTS_IN_FLIGHT;

type Level = Awaited<ReturnType<typeof runLevel>> & { readonly bound: number };

/** The unbounded API beside it: the bound set past any level's callers, as before the bound existed. */
const UNBOUNDED = 100_000;

/**
 * Ingestion by closed-loop callers, as upstream systems send: each POSTs a new webhook, waits for the answer,
 * and after a 503 waits its Retry-After. Two `partner-service api` processes, at BOUND starts in flight and
 * unbounded, take turns at each level, beside one worker on a dev server of their own.
 */
export const overloadSuite: BenchmarkSuite = {
  name: 'overload',
  title: 'Ingestion under overload (32, 128 and 512 callers at once)',
  run: ({ databaseUrl, knex, progress }) =>
    withCleanups('overload', progress, async (cleanups) => {
      const partner = await startPartnerServer();
      cleanups.push(() => partner.close());
      const { spawnWorker, spawnApi, rigWith } = await startServiceRig({
        databaseUrl,
        knex,
        partner,
        executable: benchTemporalBinary(),
        cleanups,
        progress,
      });
      const rig = rigWith([await spawnWorker()]);
      const unbounded = await spawnApi({ INGEST_MAX_STARTS_IN_FLIGHT: String(UNBOUNDED) });
      const apis = [
        { bound: BOUND, url: rig.apiUrl },
        { bound: UNBOUNDED, url: unbounded.url },
      ];
      for (const api of apis) {
        await waitForHealthz({ ...rig, services: [...rig.services, unbounded.process] }, 'the API', api.url, 60_000);
        await ingest(api.url, `warm-up-${api.bound}`, 100);
      }
      const levels: Level[] = [];
      for (const callers of LEVELS) {
        for (const api of apis) {
          progress(`overload: ${callers} callers for ${SECONDS} s, api at ${api.bound} starts in flight`);
          levels.push({ ...(await runLevel(rig, api.url, partner, callers)), bound: api.bound });
        }
      }
      return report(levels);
    }),
};

async function runLevel(rig: Rig, apiUrl: string, partner: PartnerServer, callers: number) {
  const prefix = `overload-${callers}-${Date.now().toString(36)}`;
  const dispatcher = new Agent({ connections: callers, pipelining: 1 });
  const accepted: string[] = [];
  const acceptedMs: number[] = [];
  const refusals = new Map<string, number>();
  let sent = 0;
  const until = performance.now() + SECONDS * 1000;
  const caller = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      const res = await request(`${apiUrl}/internal/v1/webhooks`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${INTERNAL_API_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(benchEvent(prefix, sent++)),
      });
      const body = (await res.body.json()) as { webhook_id?: string; reason?: string };
      if (res.statusCode === 202) {
        accepted.push(body.webhook_id!);
        acceptedMs.push(performance.now() - started);
        continue;
      }
      const key = res.statusCode === 503 ? `503 ${body.reason}` : String(res.statusCode);
      refusals.set(key, (refusals.get(key) ?? 0) + 1);
      if (res.statusCode === 503) await delay(Number(res.headers['retry-after'] ?? 1) * 1000);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: callers }, caller));
  const seconds = (performance.now() - started) / 1000;
  await dispatcher.close();
  // Every call has answered: a row without a run now is a start in doubt.
  const [{ n: inDoubt }] = await rig
    .knex('webhook_events')
    .whereRaw('starts_with(event_id, ?)', [`${prefix}-`])
    .whereNull('run_id')
    .count<{ n: string }[]>({ n: '*' });
  const delivered = await waitUntil(rig, `delivery of ${prefix}`, 600_000, async () =>
    accepted.every((id) => partner.receipts.has(id)),
  );
  return {
    callers,
    sent,
    seconds,
    accepted: accepted.length,
    latency: quantiles(acceptedMs),
    refusals,
    inDoubt: Number(inDoubt),
    delivered,
  };
}

function report(levels: readonly Level[]): string {
  const bounded = levels.filter((l) => l.bound === BOUND);
  const at = (callers: number) => bounded.find((l) => l.callers === callers)!;
  const ratio = at(512).latency.p99 / at(128).latency.p99;
  const others = [...new Set(levels.flatMap((l) => [...l.refusals.keys()]))]
    .filter((key) => !REASONS.includes(key))
    .sort();
  const inDoubt = bounded.reduce((total, l) => total + l.inDoubt, 0);
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  return [
    `Closed-loop callers for ${SECONDS} s per level: each POSTs a new webhook (the example candidate/new event, its own event_id and candidate), waits for the answer, and after a 503 ` +
      `waits its Retry-After before the next. Two \`partner-service api\` processes take turns at each level: one at INGEST_MAX_STARTS_IN_FLIGHT ${BOUND}, ` +
      `one unbounded (${UNBOUNDED.toLocaleString('en')}, as before the bound), each after 100 webhooks of warm-up, with one \`partner-service worker\`, a dev server ` +
      'of their own and a loopback partner answering 204. "Rows in doubt" are the level\'s rows without a run once every call ' +
      'has answered; every 202 was delivered before the next level began.',
    '',
    table(
      [
        'callers at once',
        'api',
        '>sent',
        '>202 per second',
        '>p50 of the 202s',
        '>p99 of the 202s',
        ...[...REASONS, ...others].map((r) => `>${r}`),
        '>rows in doubt',
        'every 202 delivered',
      ],
      levels.map((l) => [
        l.callers,
        l.bound === BOUND ? `bound ${BOUND}` : 'unbounded',
        l.sent,
        (l.accepted / l.seconds).toFixed(1),
        ms(l.latency.p50),
        ms(l.latency.p99),
        ...[...REASONS, ...others].map((r) => l.refusals.get(r) ?? 0),
        l.inDoubt,
        l.delivered ? 'yes' : '**no**',
      ]),
    ),
    '',
    `At bound ${BOUND}: p99 of the 202s at 512 callers ÷ at 128: ${ratio.toFixed(2)} (goal ≤ ${GOAL_P99_RATIO}: ${verdict(ratio <= GOAL_P99_RATIO)}); ` +
      `rows in doubt from overload: ${inDoubt} (goal 0: ${verdict(inDoubt === 0)}).`,
  ].join('\n');
}

/** Each 503 by its reason, always shown; any other refusal gets a column of its own. */
const REASONS = ['503 overloaded', '503 temporal_unreachable', '503 outcome_unknown'];
