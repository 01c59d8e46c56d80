import os from 'node:os';

/** One figure for each process the service runs as. */
export interface Measured<T> {
  readonly temporal: T;
  readonly api: T;
  readonly worker: T;
}

/** CPU seconds by process; `machine` is every core's busy time, whoever used it. */
export interface CpuFigures extends Measured<number> {
  readonly postgres: number;
  readonly bench: number;
  readonly machine: number;
}

export interface PartFigures {
  readonly count: number;
  /** POSTs answered 202. */
  readonly accepted: number;
  /** Other answers (status or error name) and how often. */
  readonly refused: ReadonlyMap<string, number>;
  readonly timedOut: boolean;
  readonly timeoutSeconds: number;
  /** First POST sent to last 202. */
  readonly ingestSeconds: number;
  /** First 202 to the last partner receipt the part expects. */
  readonly endToEndSeconds: number;
  /** First POST sent to the last partner receipt. */
  readonly totalSeconds: number;
  /** First POST sent until every row was `delivered`: the interval of the CPU figures. */
  readonly untilDeliveredSeconds: number;
  readonly deliveriesPerSecond: number;
  /** From each 202 to the partner's first receipt of that webhook. */
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  readonly expectedReceipts: number;
  /** Webhooks the partner received fewer or more times than expected, and receipts of unknown ids. */
  readonly missing: number;
  readonly surplus: number;
  readonly strays: number;
  readonly deliveredRows: number;
  readonly rows: number;
  readonly deliveredOnSecondAttempt: number;
  readonly laterAttempts: number;
  /** Recorded attempts other than the part expects (a first-attempt success; or a 500, then a success), one line per outcome. */
  readonly unexpectedAttempts: readonly string[];
  /** Most webhooks waiting on their retry timer at once (part 2). */
  readonly peakWaiting: number;
  readonly cpu: CpuFigures;
  readonly peakRss: Measured<number>;
}

export interface DeliveriesFigures {
  readonly temporalVersion: string;
  readonly bodyBytes: number;
  readonly concurrency: number;
  readonly requestedRetried: number;
  readonly retryBudgetSeconds: number;
  readonly baselineRate: number;
  readonly part1: PartFigures;
  readonly part2: PartFigures;
}

const GOAL_PER_SECOND = 100;
const n = (value: number) => value.toLocaleString('en');
const s = (seconds: number) => `${seconds.toFixed(1)} s`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');

/** The BENCHMARKS.md section of the deliveries suite. */
export function reportDeliveries(f: DeliveriesFigures): string {
  const { part1: p1, part2: p2 } = f;
  const ratio = p1.deliveriesPerSecond / f.baselineRate;
  const reduced = p2.count < f.requestedRetried;
  const exact = (p: PartFigures) => p.accepted === p.count && !p.missing && !p.surplus && !p.strays && !p.timedOut;
  return [
    '## Webhook deliveries (Temporal dev server)',
    '',
    `\`temporal server start-dev\` (${f.temporalVersion}, SQLite file, headless) on 127.0.0.1; the service as two processes, ` +
      '`partner-service api` and `partner-service worker` (PARTNER_MAX_CONCURRENCY 200, PARTNER_MAX_PER_SECOND 100000, LOG_LEVEL warn), ' +
      'on the bench PostgreSQL; a partner server (node:http, in the bench process) that answers 204 and records when each `webhook-id` arrives. ' +
      `Each webhook is the candidate/new fixture with its own event_id (${n(f.bodyBytes)} bytes as delivered), posted to ` +
      `\`POST /internal/v1/webhooks\` by ${f.concurrency} concurrent requests after a warm-up of 20. ` +
      'CPU is user + system time from /proc/<pid>/stat between the first POST and the moment every row of the part was `delivered`; ' +
      'peak RSS is VmRSS sampled every 200 ms. PostgreSQL counts the postmaster and all its backends; ' +
      '"other" is the rest of the machine (other programs running at the same time).',
    '',
    `### Part 1: ${n(p1.count)} webhooks, partner answers 204`,
    '',
    '| measure | value |',
    '|---|---:|',
    `| delivered end to end (first 202 to last partner receipt) | **${p1.deliveriesPerSecond.toFixed(1)}/s** (${s(p1.endToEndSeconds)}) |`,
    `| ingestion (first POST to last 202) | ${(p1.accepted / p1.ingestSeconds).toFixed(1)}/s (${s(p1.ingestSeconds)}) |`,
    `| 202 to partner receipt, p50 / p99 | ${s(p1.latencyP50Ms / 1000)} / ${s(p1.latencyP99Ms / 1000)} |`,
    `| baseline: the same ${n(p1.count)} POSTs (body, headers) from a plain undici loop straight to the partner, ${f.concurrency} concurrent | ${f.baselineRate.toFixed(0)}/s |`,
    `| service / baseline | ${ratio.toFixed(4)} × |`,
    '',
    processTable(p1, f.part1.accepted),
    '',
    `${bottleneck(p1)}`,
    '',
    `### Part 2: ${n(p2.count)} webhooks whose first attempt the partner answers 500`,
    '',
    reduced
      ? `Reduced from ${n(f.requestedRetried)}: at Part 1's rate a retried webhook costs about two deliveries, and only ${n(p2.count)} ` +
        `fit in about ${f.retryBudgetSeconds / 60} minutes.`
      : `All ${n(p2.count)} requested webhooks were run.`,
    '',
    '| measure | value |',
    '|---|---:|',
    `| total, first POST to the last partner receipt | ${s(p2.totalSeconds)} |`,
    `| until every row was \`delivered\` | ${s(p2.untilDeliveredSeconds)} |`,
    `| ingestion (first POST to last 202) | ${(p2.accepted / p2.ingestSeconds).toFixed(1)}/s (${s(p2.ingestSeconds)}) |`,
    `| most webhooks waiting on their 10 s timer at once | ${n(p2.peakWaiting)} |`,
    `| delivered on attempt 2 (webhook_attempts) / any attempt 3 or later | ${n(p2.deliveredOnSecondAttempt)} / ${n(p2.laterAttempts)} |`,
    '',
    processTable(p2, p2.accepted),
    '',
    '### Goals',
    '',
    '| goal | measured | |',
    '|---|---|---|',
    `| ≥ ${GOAL_PER_SECOND} deliveries/s end to end (Part 1) | ${p1.deliveriesPerSecond.toFixed(1)}/s | ${verdict(p1.deliveriesPerSecond >= GOAL_PER_SECOND)} |`,
    ...[p1, p2].flatMap((p, i) => checks(p, i + 1)),
    `| Part 2: every webhook delivered on attempt 2, no third POST | ${n(p2.deliveredOnSecondAttempt)} of ${n(p2.accepted)}, ${p2.laterAttempts} later attempts | ` +
      `${verdict(exact(p2) && p2.deliveredOnSecondAttempt === p2.accepted && p2.laterAttempts === 0)} |`,
    ...[p1, p2].flatMap((p, i) =>
      p.unexpectedAttempts.length ? ['', `Unexpected attempts recorded in Part ${i + 1} (webhook_attempts):`, '', ...p.unexpectedAttempts.map((line) => `- ${line}`)] : []),
  ].join('\n');
}

function checks(p: PartFigures, part: number): string[] {
  const refused = [...p.refused].map(([what, count]) => `${count} × ${what}`).join(', ') || 'none';
  const times = p.expectedReceipts === 1 ? 'exactly once' : `exactly ${p.expectedReceipts} times`;
  return [
    `| Part ${part}: every POST answered 202 | ${n(p.accepted)} of ${n(p.count)} (other: ${refused}) | ${verdict(p.accepted === p.count)} |`,
    `| Part ${part}: partner received each webhook-id ${times} | ${p.missing} fewer, ${p.surplus} more, ${p.strays} unknown ids${p.timedOut ? `; gave up after ${p.timeoutSeconds} s` : ''} | ` +
      `${verdict(!p.missing && !p.surplus && !p.strays && !p.timedOut)} |`,
    `| Part ${part}: every row of webhook_events \`delivered\` | ${n(p.deliveredRows)} of ${n(p.rows)} | ${verdict(p.rows === p.accepted && p.deliveredRows === p.rows)} |`,
  ];
}

const PROCESSES: Array<[key: keyof CpuFigures, label: string]> = [
  ['temporal', 'Temporal dev server'],
  ['api', 'API (`partner-service api`)'],
  ['worker', 'worker (`partner-service worker`)'],
  ['postgres', 'PostgreSQL (postmaster and backends)'],
  ['bench', 'bench process (load, partner server, polling)'],
];

function processTable(p: PartFigures, webhooks: number): string {
  const wall = p.untilDeliveredSeconds;
  const ours = PROCESSES.reduce((sum, [key]) => sum + (Number.isNaN(p.cpu[key]) ? 0 : p.cpu[key]), 0);
  const row = (label: string, cpu: number, rss?: number) =>
    Number.isNaN(cpu)
      ? `| ${label} | n/a (not on this machine) | | | |`
      : `| ${label} | ${cpu.toFixed(1)} | ${((cpu * 1000) / webhooks).toFixed(2)} | ${((cpu / wall) * 100).toFixed(0)} % | ${rss === undefined ? '' : mib(rss)} |`;
  return [
    `Over ${s(wall)} (first POST until every row was delivered), ${n(webhooks)} webhooks:`,
    '',
    '| process | CPU s | CPU ms per webhook | CPU % of one core | peak RSS |',
    '|---|---:|---:|---:|---:|',
    ...PROCESSES.map(([key, label]) => row(label, p.cpu[key], key in p.peakRss ? p.peakRss[key as keyof Measured<number>] : undefined)),
    row('other processes on the machine', Math.max(0, p.cpu.machine - ours)),
    row(`whole machine (${os.cpus().length} cores)`, p.cpu.machine),
  ].join('\n');
}

/** Names the process that used the most CPU per webhook, and whether it or the machine ran out of CPU. */
function bottleneck(p: PartFigures): string {
  const service = PROCESSES.filter(([key]) => key !== 'bench' && !Number.isNaN(p.cpu[key]));
  const [key, label] = service.reduce((a, b) => (p.cpu[b[0]] > p.cpu[a[0]] ? b : a));
  const cores = os.cpus().length;
  const busy = (p.cpu.machine / (p.untilDeliveredSeconds * cores)) * 100;
  const oneCore = (p.cpu[key] / p.untilDeliveredSeconds) * 100;
  const share = `The largest share of CPU per webhook is the ${label}'s (${((p.cpu[key] * 1000) / p.accepted).toFixed(1)} ms, ${oneCore.toFixed(0)} % of one core). `;
  if (busy >= 85) return `${share}The machine's ${cores} cores were ${busy.toFixed(0)} % busy on average, so throughput was bound by the machine's CPU.`;
  if (oneCore >= 75) {
    return `${share}It stayed near one full core while the machine's ${cores} cores were only ${busy.toFixed(0)} % busy: its work is largely serial, ` +
      'and it is the bottleneck.';
  }
  return `${share}The machine's ${cores} cores were ${busy.toFixed(0)} % busy on average and no process neared a full core, so the rate is limited by waiting ` +
    '(round trips, timers, polling), not by CPU.';
}
