import os from 'node:os';
import type { ActionCounts } from './history-actions';

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

export interface FloorFigures {
  readonly concurrency: number;
  readonly warmup: number;
  readonly bare: FloorRun;
  readonly bareEager: FloorRun;
  readonly service: FloorRun;
}

/** The goals for the service against the floor. */
const GOAL_RATIO = 0.9;
const GOAL_PER_SECOND = 100;
const GOAL_EVENTS = 8;
const GOAL_ACTIONS = 3;

const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
const ratio = (value: number) => `${value.toFixed(2)} ×`;

/** The "service vs. the floor" subsection of the deliveries section, also printed by `npx tsx bench/floor.ts`. */
export function reportFloor(f: FloorFigures): string {
  const { bare, bareEager, service } = f;
  const perThousand = (run: FloorRun, cpu: number | undefined) =>
    cpu === undefined ? 'in the worker\'s' : Number.isNaN(cpu) ? 'n/a' : ((cpu * 1000) / run.deliveries).toFixed(1);
  const busy = (run: FloorRun) => `${((run.cpu.machine / (run.intervalSeconds * os.cpus().length)) * 100).toFixed(0)} %`;
  const row = (label: string, run: FloorRun) =>
    `| ${label} | **${run.deliveriesPerSecond.toFixed(1)}/s** (${run.endToEndSeconds.toFixed(1)} s) | ` +
    `${ratio(run.deliveriesPerSecond / bare.deliveriesPerSecond)} | ${ratio(run.deliveriesPerSecond / bareEager.deliveriesPerSecond)} | ` +
    `${run.history.events} | ${run.history.actions} | ` +
    `${perThousand(run, run.cpu.temporal)} | ${perThousand(run, run.cpu.worker)} | ${perThousand(run, run.cpu.postgres)} | ${perThousand(run, run.cpu.bench)} | ${busy(run)} |`;
  const serverRatio = service.deliveriesPerSecond / bare.deliveriesPerSecond;
  const { events, actions } = service.history;
  return [
    `### The service against the floor: ${service.deliveries.toLocaleString('en')} deliveries at ${f.concurrency} concurrent starts, each on a fresh dev server`,
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
      'share the machine: "machine busy" is all cores, whoever used them.',
    '',
    '| run | deliveries/s | ratio to bare | ratio to bare-eager | events | actions | CPU s per 1,000: Temporal dev server | worker\'s node process | PostgreSQL | bench process (load, partner) | machine busy |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    row('bare', bare),
    row('bare, eager start', bareEager),
    row('service (`partner-service start`)', service),
    '',
    '| goal | measured | |',
    '|---|---|---|',
    `| end to end ≥ ${GOAL_RATIO} × the bare workflow | ${ratio(serverRatio)} (${ratio(service.deliveriesPerSecond / bareEager.deliveriesPerSecond)} of bare with eager start) | ${verdict(serverRatio >= GOAL_RATIO)} |`,
    `| ≥ ${GOAL_PER_SECOND} deliveries/s in the single-process \`start\` | ${service.deliveriesPerSecond.toFixed(1)}/s | ${verdict(service.deliveriesPerSecond >= GOAL_PER_SECOND)} |`,
    `| a first-try delivery: ≤ ${GOAL_EVENTS} events and ${GOAL_ACTIONS} actions | ${events} events, ${actions} actions | ${verdict(events <= GOAL_EVENTS && actions <= GOAL_ACTIONS)} |`,
  ].join('\n');
}
