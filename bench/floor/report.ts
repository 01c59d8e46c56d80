import os from 'node:os';
import { LOCAL_SQLITE_PRAGMAS } from '../../temporal/local-temporal';
import type { ActionCounts } from '../harness/history';
import type { PartnerServer } from '../harness/partner';
import { table, verdict } from '../harness/render';
import { median } from '../harness/stats';
import { CONCURRENCY, WARMUP_WEBHOOKS } from '../harness/webhook-part';

/** What every measurement of the floor gets. */
export interface RunOptions {
  readonly partner: PartnerServer;
  readonly deliveries: number;
  readonly warmup: number;
  /** CPU seconds of the PostgreSQL tree, NaN when remote (idle in the bare workflow's runs, measured all the same). */
  postgresCpuSeconds(): number;
  progress(message: string): void;
}

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

/** One round: the measurements side by side, each on a fresh dev server. */
export interface FloorRound {
  readonly bare: FloorRun;
  readonly bareEager: FloorRun;
  readonly service: FloorRun;
  /** `start` of each variant (another checkout, other settings), in the order of FloorFigures.variants. */
  readonly variants: readonly FloorRun[];
}

export interface FloorFigures {
  readonly temporalVersion: string;
  readonly rounds: readonly FloorRound[];
  /** The variants' names, in the order of each round's `variants`. */
  readonly variants: readonly string[];
}

const [GOAL_RATIO, GOAL_PER_SECOND, GOAL_EVENTS, GOAL_ACTIONS] = [0.9, 100, 8, 3];

const ratio = (value: number) => `${value.toFixed(2)} ×`;
const list = (values: number[], format: (v: number) => string) => values.map(format).join(', ');

/** The floor suite's section: each round's runs, the goals on the medians, and the variants' medians. */
export function reportFloor(f: FloorFigures): string {
  const perThousand = (run: FloorRun, cpu: number | undefined) =>
    cpu === undefined ? "in the worker's" : Number.isNaN(cpu) ? 'n/a' : ((cpu * 1000) / run.deliveries).toFixed(1);
  const busy = (run: FloorRun) =>
    `${((run.cpu.machine / (run.intervalSeconds * os.cpus().length)) * 100).toFixed(0)} %`;
  const row = (label: string, run: FloorRun, { bare, bareEager }: FloorRound) => [
    label,
    `**${run.deliveriesPerSecond.toFixed(1)}/s** (${run.endToEndSeconds.toFixed(1)} s)`,
    ratio(run.deliveriesPerSecond / bare.deliveriesPerSecond),
    ratio(run.deliveriesPerSecond / bareEager.deliveriesPerSecond),
    run.history.events,
    run.history.actions,
    perThousand(run, run.cpu.temporal),
    perThousand(run, run.cpu.worker),
    perThousand(run, run.cpu.postgres),
    perThousand(run, run.cpu.bench),
    busy(run),
  ];
  const { rounds } = f;
  const service = rounds[0].service;
  const toBare = rounds.map((r) => r.service.deliveriesPerSecond / r.bare.deliveriesPerSecond);
  const toEager = rounds.map((r) => r.service.deliveriesPerSecond / r.bareEager.deliveriesPerSecond);
  const rates = rounds.map((r) => r.service.deliveriesPerSecond);
  const { events, actions } = service.history;
  return [
    `${service.deliveries.toLocaleString('en')} deliveries at ${CONCURRENCY} concurrent starts, ${rounds.length} round${rounds.length === 1 ? '' : 's'}, each run on a fresh dev server: ` +
      `\`temporal server start-dev\` (${f.temporalVersion}, SQLite file) on 127.0.0.1 with npm start's SQLite settings ` +
      `(${LOCAL_SQLITE_PRAGMAS.map((p) => `\`--sqlite-pragma ${p}\``).join(', ')}).`,
    '',
    "Measured side by side in one run, so that the figures share the machine's load of the moment. The **bare** workflow is " +
      'the least a delivery on Temporal costs: bench/floor/bare-workflow/, one workflow that runs one local activity POSTing the same body with the same ' +
      "headers (undici, 2XX expected) and completes; started with the four Keyword search attributes the issue names (the service's start sets three, and upserts WebhookStatus only after a failure); client and " +
      'worker (SDK defaults) in the bench process on a task queue of its own, on a fresh headless dev server. ' +
      "**Eager** is the same with `requestEagerStart: true` and the `Client` built on the worker's `NativeConnection`. The **service** is the real " +
      '`partner-service start` (`node dist/cli/main.js start`: API and worker in one process, on the bench PostgreSQL; PARTNER_MAX_CONCURRENCY 200, PARTNER_MAX_PER_SECOND 100000, PARTNER_BREAKER_FAILURES 10000, LOG_LEVEL warn) with a fresh ' +
      'DATA_DIR, so it runs its own fresh dev server (the same SQLite settings, with its UI on), fed through `POST /internal/v1/webhooks` by a partner server ' +
      `in the bench process that answers 204. Each warms up with ${WARMUP_WEBHOOKS}, then delivers ${service.deliveries.toLocaleString('en')}; deliveries/s counts from the first start returned (bare) ` +
      "or the first 202 (service) to the partner's last receipt. Events and actions are those of one delivered workflow's history " +
      "(bench/harness/history.ts). CPU is user + system time from /proc over the measurement; for the bare workflow the worker's process is the " +
      'bench process, which also runs the load and the partner server; PostgreSQL counts the postmaster and its backends. Another workload may ' +
      'share the machine: "machine busy" is all cores, whoever used them. Such load varies from run to run, so the rounds repeat the runs ' +
      "side by side and the goals are judged on the median of the rounds' ratios.",
    '',
    table(
      [
        'run',
        '>deliveries/s',
        '>ratio to bare',
        '>ratio to bare-eager',
        '>events',
        '>actions',
        '>CPU s per 1,000: Temporal dev server',
        ">worker's node process",
        '>PostgreSQL',
        '>bench process (load, partner)',
        '>machine busy',
      ],
      rounds.flatMap((round, i) => [
        row(`${i + 1}: bare`, round.bare, round),
        row(`${i + 1}: bare, eager start`, round.bareEager, round),
        row(`${i + 1}: service (\`partner-service start\`)`, round.service, round),
        ...f.variants.map((name, v) => row(`${i + 1}: service, ${name}`, round.variants[v], round)),
      ]),
    ),
    '',
    table(
      ['goal', 'measured (median of the rounds; each round)', ''],
      [
        [
          `end to end ≥ ${GOAL_RATIO} × the bare workflow`,
          `${ratio(median(toBare))} (${list(toBare, ratio)}); against bare with eager start ${ratio(median(toEager))} (${list(toEager, ratio)})`,
          `${verdict(median(toBare) >= GOAL_RATIO)}; with eager start ${verdict(median(toEager) >= GOAL_RATIO)}`,
        ],
        [
          `≥ ${GOAL_PER_SECOND} deliveries/s in the single-process \`start\``,
          `${median(rates).toFixed(1)}/s (${list(rates, (v) => `${v.toFixed(1)}/s`)})`,
          verdict(median(rates) >= GOAL_PER_SECOND),
        ],
        [
          `a first-try delivery: ≤ ${GOAL_EVENTS} events and ${GOAL_ACTIONS} actions`,
          `${events} events, ${actions} actions`,
          verdict(events <= GOAL_EVENTS && actions <= GOAL_ACTIONS),
        ],
      ],
    ),
    ...(f.variants.length ? ['', variantsTable(f)] : []),
  ].join('\n');
}

/** This code's `start` and each variant's: the medians of the rounds' rates, ratios to bare and CPU per delivery, and a first try's history. */
function variantsTable(f: FloorFigures): string {
  const rows = [
    { label: 'this code', runs: f.rounds.map((r) => r.service) },
    ...f.variants.map((label, v) => ({ label, runs: f.rounds.map((r) => r.variants[v]) })),
  ];
  const perDelivery = (runs: readonly FloorRun[], cpu: (c: FloorCpu) => number | undefined) =>
    median(runs.map((run) => ((cpu(run.cpu) ?? NaN) * 1000) / run.deliveries)).toFixed(2);
  return [
    `#### \`start\` and its variants: medians of the ${f.rounds.length} round${f.rounds.length === 1 ? '' : 's'}`,
    '',
    table(
      [
        '`start`',
        '>deliveries/s',
        '>ratio to bare',
        '>events',
        '>actions',
        '>CPU ms per delivery: Temporal dev server',
        '>`start`',
        '>PostgreSQL',
        '>bench process',
        '>whole machine',
      ],
      rows.map(({ label, runs }) => [
        label,
        `${median(runs.map((r) => r.deliveriesPerSecond)).toFixed(1)}/s`,
        ratio(median(runs.map((r, i) => r.deliveriesPerSecond / f.rounds[i].bare.deliveriesPerSecond))),
        runs[0].history.events,
        runs[0].history.actions,
        perDelivery(runs, (c) => c.temporal),
        perDelivery(runs, (c) => c.worker),
        perDelivery(runs, (c) => c.postgres),
        perDelivery(runs, (c) => c.bench),
        perDelivery(runs, (c) => c.machine),
      ]),
    ),
  ].join('\n');
}
