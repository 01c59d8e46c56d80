import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { toEnvelope } from '../events/envelope';
import { inParallel } from '../lib/in-parallel';
import { createLogger } from '../lib/logger';
import { ensureSearchAttributes } from '../temporal/register-search-attributes';
import { quietBundler } from '../worker/bundle';
import { installTemporalRuntime } from '../worker/temporal-runtime';
import { bareActivities } from './bare-workflow/activities';
import { CONCURRENCY, EVENT, ownCpuSeconds, PARTNER_ACCESS_TOKEN, WARMUP_WEBHOOKS } from './delivery-part';
import { deliver, measureBare, type BareOptions } from './floor-bare';
import type { FloorRun } from './floor-report';
import { countActions } from './history-actions';
import { startPartnerServer, type PartnerServer } from './partner-server';
import { cpuSeconds, machineBusySeconds } from './proc-stats';
import { benchTemporalBinary, startBenchTemporal } from './temporal-server';

// Design (A) against the floor: `npx tsc -p tsconfig.bench.json && node build/bench/queue-floor.js`.
// BENCH_FLOOR_ROUNDS (3), QUEUE_DELIVERIES (1000), CAP_RPS (10), CAP_WEBHOOKS (200), PAUSE_WEBHOOKS (20), PAUSE_SECONDS (10).
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = env('BENCH_FLOOR_ROUNDS', 3);
const DELIVERIES = env('QUEUE_DELIVERIES', 1_000);
const progress = (message: string) => process.stderr.write(`[queue-bench] ${message}\n`);
const run = promisify(execFile);

/** `temporal task-queue config set` on the partner's activity queue; returns what the CLI printed. */
async function setRps(executable: string, address: string, taskQueue: string, rps: number | 'default'): Promise<string> {
  const args = ['task-queue', 'config', 'set', '--address', address, '--namespace', 'default', '--task-queue', taskQueue,
    '--task-queue-type', 'activity', '--queue-rps-limit', String(rps), '--queue-rps-limit-reason', 'bench'];
  progress(`temporal ${args.join(' ')}`);
  const { stdout, stderr } = await run(executable, args);
  return `${stdout}${stderr}`.trim();
}

/** A workflow worker (eager activities off: SDK 1.24 has no disableEagerActivityExecution; 0 reservations and allowEagerDispatch false) plus one activity worker per connection on `<taskQueue>-partner`. */
async function queueWorkers(address: string, workflowBundle: { code: string }, endpoint: string, activityWorkers: number) {
  const connections = await Promise.all(Array.from({ length: activityWorkers + 1 }, () => NativeConnection.connect({ address })));
  const taskQueue = `bench-bare-${randomUUID()}`;
  const perWorker = Array.from({ length: activityWorkers }, () => 0);
  const workers = [await Worker.create({ connection: connections[0], taskQueue, workflowBundle, maxEagerActivityReservationsPerWorkflowTask: 0 })];
  for (let i = 0; i < activityWorkers; i++) {
    const { postEnvelope } = bareActivities(endpoint, PARTNER_ACCESS_TOKEN);
    const activities = { postEnvelope: async (input: Parameters<typeof postEnvelope>[0]) => (perWorker[i]++, postEnvelope(input)) };
    workers.push(await Worker.create({ connection: connections[i + 1], taskQueue: `${taskQueue}-partner`, activities }));
  }
  const runAll = <T>(fn: () => Promise<T>): Promise<T> => workers.reduce<() => Promise<T>>((inner, w) => () => w.runUntil(inner), fn)();
  return { taskQueue, partnerQueue: `${taskQueue}-partner`, perWorker, runAll, close: () => Promise.all(connections.map((c) => c.close())) };
}

/** measureBare's figures for design (A): the POST a regular activity on its own queue, capped at `rps`, one activity worker. */
async function measureQueue(options: BareOptions, rps: number): Promise<FloorRun> {
  const temporal = await startBenchTemporal(options.executable);
  const { address } = temporal.server;
  const plain = await Connection.connect({ address });
  const workers = await queueWorkers(address, options.workflowBundle, `${options.partner.url}/webhooks`, 1);
  try {
    await ensureSearchAttributes(plain, 'default');
    await setRps(options.executable, address, workers.partnerQueue, rps);
    const client = new Client({ connection: plain });
    const tag = Date.now().toString(36);
    const common = { ...options, client, taskQueue: workers.taskQueue };
    return await workers.runAll(async () => {
      await deliver({ ...common, prefix: `queue-warm-${tag}`, count: options.warmup });
      const pid = temporal.server.process.pid!;
      const before = { temporal: cpuSeconds(pid), worker: ownCpuSeconds(), machine: machineBusySeconds() };
      const measured = await deliver({ ...common, prefix: `queue-${tag}`, count: options.deliveries });
      const cpu = { temporal: cpuSeconds(pid) - before.temporal, worker: ownCpuSeconds() - before.worker, postgres: NaN, bench: undefined, machine: machineBusySeconds() - before.machine };
      const handle = client.workflow.getHandle(measured.lastWorkflowId);
      await handle.result();
      return { ...measured, cpu, history: countActions(await handle.fetchHistory()) };
    });
  } finally {
    await plain.close();
    await workers.close();
    await temporal.stop();
  }
}

/** The most arrivals in any window [t, t + 1000 ms) (t at each arrival: the exact maximum). */
function maxPerSecond(arrivals: number[]): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j] < sorted[i] + 1000) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

/** (3) The cap at CAP_RPS with three activity workers, then rate 0 for PAUSE_SECONDS while PAUSE_WEBHOOKS wait. */
async function capAndPause(executable: string, workflowBundle: { code: string }, partner: PartnerServer): Promise<string[]> {
  const rps = env('CAP_RPS', 10), count = env('CAP_WEBHOOKS', 200), held = env('PAUSE_WEBHOOKS', 20), pauseS = env('PAUSE_SECONDS', 10);
  const temporal = await startBenchTemporal(executable);
  const { address } = temporal.server;
  const plain = await Connection.connect({ address });
  const workers = await queueWorkers(address, workflowBundle, `${partner.url}/webhooks`, 3);
  const out: string[] = [];
  const cli = async (value: number | 'default') => {
    const t = performance.now();
    const printed = await setRps(executable, address, workers.partnerQueue, value);
    out.push(`- \`--queue-rps-limit ${value}\` (CLI ran ${(performance.now() - t).toFixed(0)} ms) printed: ${JSON.stringify(printed)}`);
  };
  const event = toEnvelope(EVENT);
  const client = new Client({ connection: plain });
  const startAll = async (prefix: string, n: number) => {
    const t0 = performance.now();
    await inParallel(n, CONCURRENCY, async (i) => {
      await client.workflow.start('bareDelivery', { workflowId: `${prefix}-${i}`, taskQueue: workers.taskQueue, args: [{ webhookId: `${prefix}-${i}`, event }] });
    });
    return { t0, ids: Array.from({ length: n }, (_, i) => `${prefix}-${i}`) };
  };
  const waitAll = async (ids: string[], timeoutMs: number) => {
    const deadline = performance.now() + timeoutMs;
    while (!ids.every((id) => partner.receipts.has(id)) && performance.now() < deadline) await delay(100);
    return ids.map((id) => partner.receipts.get(id)?.[0]).filter((t): t is number => t !== undefined);
  };
  try {
    await workers.runAll(async () => {
      await cli(rps);
      partner.reset({ failFirst: false });
      progress(`cap: ${count} webhooks at once, rps ${rps}, 3 activity workers`);
      const cap = await startAll('cap', count);
      const arrivals = await waitAll(cap.ids, 120_000 + (count / rps) * 3000);
      const first = Math.min(...arrivals), last = Math.max(...arrivals);
      const dup = [...partner.receipts.values()].filter((r) => r.length > 1).length;
      out.push(`- cap ${rps}/s, 3 activity workers: ${arrivals.length}/${count} POSTs received (${dup} twice); most in any 1 s window: **${maxPerSecond(arrivals)}**; ` +
        `first start to last POST ${((last - cap.t0) / 1000).toFixed(1)} s, first to last POST ${((last - first) / 1000).toFixed(1)} s (${((arrivals.length - 1) / ((last - first) / 1000)).toFixed(2)}/s); ` +
        `first POST ${(first - cap.t0).toFixed(0)} ms after the first start; per worker ${workers.perWorker.join('/')}`);
      const buckets = new Map<number, number>();
      for (const t of arrivals) buckets.set(Math.floor((t - first) / 1000), (buckets.get(Math.floor((t - first) / 1000)) ?? 0) + 1);
      out.push(`- POSTs per second since the first: ${[...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([, n]) => n).join(' ')}`);
      await cli(0);
      partner.reset({ failFirst: false });
      const paused = await startAll('pause', held);
      await delay(pauseS * 1000);
      const during = partner.receipts.size;
      const sinceStart = ((performance.now() - paused.t0) / 1000).toFixed(1);
      const resumedAt = performance.now();
      await cli(rps);
      const after = await waitAll(paused.ids, 60_000);
      out.push(`- rate 0: ${during} POSTs of ${held} arrived in the ${sinceStart} s after their starts; after setting ${rps} again: ${after.length}/${held} arrived, ` +
        `first ${(Math.min(...after) - resumedAt).toFixed(0)} ms and last ${(Math.max(...after) - resumedAt).toFixed(0)} ms after the CLI call began`);
    });
  } finally {
    await plain.close();
    await workers.close();
    await temporal.stop();
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main(): Promise<void> {
  installTemporalRuntime(createLogger('error'));
  const executable = benchTemporalBinary();
  const bundle = async (file: string) => bundleWorkflowCode({ workflowsPath: require.resolve(file), logger: quietBundler });
  const bareBundle = await bundle('./bare-workflow/workflows');
  const queueBundle = await bundle('./bare-workflow/queue-workflows');
  const partner = await startPartnerServer();
  try {
    const common = { executable, partner, eager: false, deliveries: DELIVERIES, warmup: WARMUP_WEBHOOKS, progress, postgresCpuSeconds: () => NaN };
    const rounds: Array<{ bare: FloorRun; queue: FloorRun }> = [];
    const lines = ['| round | variant | deliveries/s (s) | events | actions | Temporal CPU ms/delivery | bench process CPU ms/delivery | queue/bare rate |', '|---|---|---|---|---|---|---|---|'];
    const row = (r: number, name: string, x: FloorRun, ratio: number) =>
      `| ${r} | ${name} | ${x.deliveriesPerSecond.toFixed(1)} (${x.endToEndSeconds.toFixed(1)}) | ${x.history.events} | ${x.history.actions} | ${((x.cpu.temporal * 1000) / x.deliveries).toFixed(2)} | ${((x.cpu.worker * 1000) / x.deliveries).toFixed(2)} | ${ratio.toFixed(2)} |`;
    for (let r = 1; r <= ROUNDS; r++) {
      const pair: Partial<{ bare: FloorRun; queue: FloorRun }> = {};
      for (const v of r % 2 ? (['bare', 'queue'] as const) : (['queue', 'bare'] as const)) {
        progress(`round ${r} of ${ROUNDS}: ${v}`);
        pair[v] = v === 'bare' ? await measureBare({ ...common, workflowBundle: bareBundle }) : await measureQueue({ ...common, workflowBundle: queueBundle }, 10_000);
      }
      const { bare, queue } = pair as { bare: FloorRun; queue: FloorRun };
      rounds.push({ bare, queue });
      lines.push(row(r, 'bare', bare, 1), row(r, 'bare-queue', queue, queue.deliveriesPerSecond / bare.deliveriesPerSecond));
      process.stderr.write(`${lines.slice(-2).join('\n')}\n`);
    }
    const med = (f: (x: FloorRun) => number) => ({ bare: median(rounds.map((r) => f(r.bare))), queue: median(rounds.map((r) => f(r.queue))) });
    const rate = med((x) => x.deliveriesPerSecond), t = med((x) => (x.cpu.temporal * 1000) / x.deliveries), w = med((x) => (x.cpu.worker * 1000) / x.deliveries);
    if (rounds.length) lines.push(`| median | bare | ${rate.bare.toFixed(1)} | | | ${t.bare.toFixed(2)} | ${w.bare.toFixed(2)} | |`,
      `| median | bare-queue | ${rate.queue.toFixed(1)} | | | ${t.queue.toFixed(2)} | ${w.queue.toFixed(2)} | ${median(rounds.map((r) => r.queue.deliveriesPerSecond / r.bare.deliveriesPerSecond)).toFixed(2)} (ratio of medians ${(rate.queue / rate.bare).toFixed(2)}) |`);
    if (rounds.length) lines.push('', `CPU ratios bare-queue/bare (medians): Temporal ${(t.queue / t.bare).toFixed(2)}, bench process ${(w.queue / w.bare).toFixed(2)}`, '');
    if (process.env.SKIP_CAP !== '1') lines.push(...(await capAndPause(executable, queueBundle, partner)));
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await partner.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`queue bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
