import os from 'node:os';
import type { ActionCounts } from './history-actions';
import { selfTimeRows } from './cpu-profile';
import type { StartProfile } from './start-profile';

/** CPU seconds of each process over one measurement. */
export interface FloorCpu {
  readonly temporal: number;
  /** The node process that runs the worker: the bench process itself for the bare workflow, `start` for the service. */
  readonly worker: number;
  /** NaN when PostgreSQL is not on this machine. */
  readonly postgres: number;
  /** The bench process (load and partner server) when it is not the worker's process. */
  readonly bench: number | undefined;
  /** Busy seconds of every core, whoever used them. */
  readonly machine: number;
}

/** One measurement of the floor table, on a dev server of its own. */
export interface FloorRun {
  readonly deliveries: number;
  /** From the first start returned (bare) or first 202 (service) to the partner's last receipt. */
  readonly endToEndSeconds: number;
  readonly deliveriesPerSecond: number;
  /** The interval of the CPU figures: from the first start or POST sent until the last delivery was seen. */
  readonly intervalSeconds: number;
  readonly cpu: FloorCpu;
  /** One delivered workflow's history. */
  readonly history: ActionCounts;
}

/** One round: the three measurements side by side, each on a fresh dev server. */
export interface FloorRound {
  readonly bare: FloorRun;
  readonly bareEager: FloorRun;
  readonly service: FloorRun;
  /** The same `start` measurement on a build of earlier code, when BENCH_BEFORE_ROOT names one. */
  readonly before?: FloorRun;
}

export interface FloorFigures {
  readonly concurrency: number;
  readonly warmup: number;
  /** In order; the machine's other load varies between them, so the goals are judged on medians. */
  readonly rounds: readonly FloorRound[];
  /** `start` once more under --cpu-prof; undefined with BENCH_CPU_PROF=0. */
  readonly startProfile?: StartProfile;
  /** The earlier code measured beside this one: its checkout (and commit), and its profile. */
  readonly before?: { readonly label: string; readonly profile?: StartProfile };
}

/** The issue's goals for the service against the floor. */
const GOAL_RATIO = 0.9;
const GOAL_PER_SECOND = 100;
const GOAL_EVENTS = 8;
const GOAL_ACTIONS = 3;

const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
const ratio = (value: number) => `${value.toFixed(2)} ×`;

/** The "service vs. the floor" subsection of the deliveries section, also printed by `npx tsx bench/floor.ts`. */
export function reportFloor(f: FloorFigures): string {
  const perThousand = (run: FloorRun, cpu: number | undefined) =>
    cpu === undefined ? 'in the worker\'s' : Number.isNaN(cpu) ? 'n/a' : ((cpu * 1000) / run.deliveries).toFixed(1);
  const busy = (run: FloorRun) => `${((run.cpu.machine / (run.intervalSeconds * os.cpus().length)) * 100).toFixed(0)} %`;
  const row = (label: string, run: FloorRun, { bare, bareEager }: FloorRound) =>
    `| ${label} | **${run.deliveriesPerSecond.toFixed(1)}/s** (${run.endToEndSeconds.toFixed(1)} s) | ` +
    `${ratio(run.deliveriesPerSecond / bare.deliveriesPerSecond)} | ${ratio(run.deliveriesPerSecond / bareEager.deliveriesPerSecond)} | ` +
    `${run.history.events} | ${run.history.actions} | ` +
    `${perThousand(run, run.cpu.temporal)} | ${perThousand(run, run.cpu.worker)} | ${perThousand(run, run.cpu.postgres)} | ${perThousand(run, run.cpu.bench)} | ${busy(run)} |`;
  const { rounds } = f;
  const service = rounds[0].service;
  const toBare = median(rounds.map((r) => r.service.deliveriesPerSecond / r.bare.deliveriesPerSecond));
  const toEager = median(rounds.map((r) => r.service.deliveriesPerSecond / r.bareEager.deliveriesPerSecond));
  const rate = median(rounds.map((r) => r.service.deliveriesPerSecond));
  const list = (values: number[], format: (v: number) => string) => values.map(format).join(', ');
  const { events, actions } = service.history;
  const medianService = [...rounds].sort((a, b) => a.service.deliveriesPerSecond - b.service.deliveriesPerSecond)[Math.floor((rounds.length - 1) / 2)].service;
  return [
    `### The service against the floor: ${service.deliveries.toLocaleString('en')} deliveries at ${f.concurrency} concurrent starts, ${rounds.length} rounds, each run on a fresh dev server`,
    '',
    'Measured first and side by side in one run, so that the figures share the machine\'s load of the moment. The **bare** workflow is ' +
      'the least a delivery on Temporal costs: bench/bare-workflow/, one workflow that runs one local activity POSTing the same body with the same ' +
      'headers (undici, 2XX expected) and completes; started with the four Keyword search attributes the issue names (the service\'s start now sets three, and upserts WebhookStatus only after a failure); client and ' +
      'worker (SDK defaults) in the bench process on a task queue of its own, on a fresh headless dev server with npm start\'s SQLite settings. ' +
      '**Eager** is the same with `requestEagerStart: true` and the `Client` built on the worker\'s `NativeConnection`. The **service** is the real ' +
      '`partner-service start` (`node dist/cli/main.js start`: API and worker in one process, on the bench PostgreSQL; PARTNER_MAX_CONCURRENCY 200, PARTNER_MAX_PER_SECOND 100000, LOG_LEVEL warn) with a fresh ' +
      'DATA_DIR, so it runs its own fresh dev server (the same SQLite settings, with its UI on), fed through `POST /internal/v1/webhooks`. ' +
      `Each warms up with ${f.warmup}, then delivers ${service.deliveries.toLocaleString('en')}; deliveries/s counts from the first start returned (bare) ` +
      'or the first 202 (service) to the partner\'s last receipt. Events and actions are those of one delivered workflow\'s history ' +
      '(bench/history-actions.ts). CPU is user + system time from /proc over the measurement; for the bare workflow the worker\'s process is the ' +
      'bench process, which also runs the load and the partner server; PostgreSQL counts the postmaster and its backends. Another workload may ' +
      'share the machine: "machine busy" is all cores, whoever used them. Such load varies from run to run, so the rounds repeat the three ' +
      'side by side and the goals are judged on the median of the rounds\' ratios.',
    '',
    '| run | deliveries/s | ratio to bare | ratio to bare-eager | events | actions | CPU s per 1,000: Temporal dev server | worker\'s node process | PostgreSQL | bench process (load, partner) | machine busy |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rounds.flatMap((round, i) => [
      row(`${i + 1}: bare`, round.bare, round),
      row(`${i + 1}: bare, eager start`, round.bareEager, round),
      row(`${i + 1}: service (\`partner-service start\`)`, round.service, round),
      ...(round.before ? [row(`${i + 1}: service, before (${f.before?.label})`, round.before, round)] : []),
    ]),
    '',
    '| goal | measured (median of the rounds; each round) | |',
    '|---|---|---|',
    `| end to end ≥ ${GOAL_RATIO} × the bare workflow | ${ratio(toBare)} (${list(rounds.map((r) => r.service.deliveriesPerSecond / r.bare.deliveriesPerSecond), ratio)}); ` +
      `against bare with eager start ${ratio(toEager)} (${list(rounds.map((r) => r.service.deliveriesPerSecond / r.bareEager.deliveriesPerSecond), ratio)}) | ` +
      `${verdict(toBare >= GOAL_RATIO)}; with eager start ${verdict(toEager >= GOAL_RATIO)} |`,
    `| ≥ ${GOAL_PER_SECOND} deliveries/s in the single-process \`start\` | ${rate.toFixed(1)}/s (${list(rounds.map((r) => r.service.deliveriesPerSecond), (v) => `${v.toFixed(1)}/s`)}) | ${verdict(rate >= GOAL_PER_SECOND)} |`,
    `| a first-try delivery: ≤ ${GOAL_EVENTS} events and ${GOAL_ACTIONS} actions | ${events} events, ${actions} actions | ${verdict(events <= GOAL_EVENTS && actions <= GOAL_ACTIONS)} |`,
    ...(f.before ? ['', beforeAfterTable(f)] : []),
    ...(f.startProfile ? ['', startProfileTable(f.startProfile, medianService, f.before?.profile && { label: f.before.label, profile: f.before.profile, run: medianRun(rounds.map((r) => r.before!)) })] : []),
  ].join('\n');
}

/** The run of median rate among `runs`. */
const medianRun = (runs: readonly FloorRun[]) => [...runs].sort((a, b) => a.deliveriesPerSecond - b.deliveriesPerSecond)[Math.floor((runs.length - 1) / 2)];

/** Before and after: the medians of the rounds' rates and CPU per delivery, and a first try's history. */
function beforeAfterTable(f: FloorFigures): string {
  return medianTable(`#### Before and after: \`start\` of ${f.before!.label} against this code, medians of the ${f.rounds.length} rounds`, 'code', [
    { label: `before (${f.before!.label})`, runs: f.rounds.map((r) => r.before!) },
    { label: 'after (this code)', runs: f.rounds.map((r) => r.service) },
  ]);
}

/** One row per label: the median of its runs' rates and CPU per delivery, and a first try's history. */
export function medianTable(title: string, column: string, rows: ReadonlyArray<{ label: string; runs: readonly FloorRun[] }>): string {
  const perDelivery = (runs: readonly FloorRun[], cpu: (c: FloorCpu) => number | undefined) =>
    median(runs.map((run) => ((cpu(run.cpu) ?? NaN) * 1000) / run.deliveries)).toFixed(2);
  const line = ({ label, runs }: { label: string; runs: readonly FloorRun[] }) =>
    `| ${label} | ${median(runs.map((r) => r.deliveriesPerSecond)).toFixed(1)}/s | ${runs[0].history.events} | ${runs[0].history.actions} | ` +
    `${perDelivery(runs, (c) => c.temporal)} | ${perDelivery(runs, (c) => c.worker)} | ${perDelivery(runs, (c) => c.postgres)} | ${perDelivery(runs, (c) => c.bench)} | ${perDelivery(runs, (c) => c.machine)} |`;
  return [
    title,
    '',
    `| ${column} | deliveries/s | events | actions | CPU ms per delivery: Temporal dev server | \`start\` | PostgreSQL | bench process | whole machine |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(line),
  ].join('\n');
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Where the `start` process's CPU goes: the profile's shares, applied to its measured CPU per delivery. */
function startProfileTable(profile: StartProfile, service: FloorRun, before?: { label: string; profile: StartProfile; run: FloorRun }): string {
  const cpuMsPerDelivery = (service.cpu.worker * 1000) / service.deliveries;
  const msOf = (p: StartProfile, run: FloorRun, category: string) => {
    const ms = p.shares.find((share) => share.category === category)?.ms ?? 0;
    return `${((ms / p.busyMs) * 100).toFixed(1)} % | ${((ms / p.busyMs) * ((run.cpu.worker * 1000) / run.deliveries)).toFixed(2)}`;
  };
  const frames = (label: string, p: StartProfile) => [
    '',
    `The ${p.top.top.length} frames with the most self time, ${label} (all threads, ${(p.top.busyMs / 1000).toFixed(1)} s sampled):`,
    '',
    ...selfTimeRows(p.top),
  ];
  if (before) {
    return [
      `#### Where \`partner-service start\` spends its CPU, before and after (ms per delivery in each code's median round)`,
      '',
      `Each code's \`start\` once more under \`node --cpu-prof\`, after the rounds (${profile.deliveries.toLocaleString('en')} deliveries, start-up and warm-up included). ` +
        'Each sample goes to the first part of the delivery path on its stack (bench/start-profile.ts). The profiler samples wall time on a busy machine, ' +
        'so the shares are a guide; the ms columns apply them to the CPU per delivery that /proc measured in the unprofiled median round.',
      '',
      `| part | share, before (${before.label}) | ≈ ms, before | share, after | ≈ ms, after |`,
      '|---|---:|---:|---:|---:|',
      ...profile.shares.map(({ category }) => `| ${category} | ${msOf(before.profile, before.run, category)} | ${msOf(profile, service, category)} |`),
      ...frames(`before (${before.label})`, before.profile),
      ...frames('after (this code)', profile),
    ].join('\n');
  }
  return [
    `#### Where \`partner-service start\` spends its CPU (${cpuMsPerDelivery.toFixed(1)} ms per delivery in the median round)`,
    '',
    `A second run of \`start\` under \`node --cpu-prof\` (${profile.deliveries.toLocaleString('en')} deliveries, start-up and warm-up included; ` +
      `${(profile.busyMs / 1000).toFixed(1)} s sampled on all threads). Each sample goes to the first part of the delivery path on its stack ` +
      '(bench/start-profile.ts), so a syscall such as writev counts for the part that made it. The profiler samples wall time on a busy ' +
      'machine, so the shares are a guide; the ms column applies them to the CPU per delivery that /proc measured in the unprofiled run.',
    '',
    '| part | share of sampled | ≈ CPU ms per delivery |',
    '|---|---:|---:|',
    ...profile.shares.map(({ category }) => `| ${category} | ${msOf(profile, service, category)} |`),
    ...frames('this code', profile),
  ].join('\n');
}
