import os from 'node:os';
import type { DeliveryHistory } from '../harness/history';
import { table, verdict } from '../harness/render';
import type { PartFigures, ProcessRole, Quantiles } from '../harness/webhook-part';

export interface DeliveriesFigures {
  readonly temporalVersion: string;
  readonly sqlitePragmas: readonly string[];
  readonly bodyBytes: number;
  readonly concurrency: number;
  readonly baselineRate: number;
  readonly requestedRetried: number;
  readonly retryBudgetSeconds: number;
  readonly steadyPerSecond: number;
  /** Part 1 with one worker process, and again with `scaledWorkers`. */
  readonly part1: PartFigures;
  readonly part1Scaled: PartFigures;
  readonly scaledWorkers: number;
  readonly part2: PartFigures;
  /** The open-loop schedule at `steadyPerSecond`. */
  readonly part3: PartFigures;
  readonly histories: ReadonlyArray<DeliveryHistory & { readonly label: string }>;
}

const [GOAL_PER_SECOND, GOAL_STEADY_P99_MS] = [100, 1000];
const n = (value: number) => value.toLocaleString('en');
const s = (seconds: number) => `${seconds.toFixed(1)} s`;
/** Milliseconds below a second, else seconds. */
const ms = (value: number) =>
  value < 1000 ? `${value.toFixed(0)} ms` : `${(value / 1000).toFixed(value < 10_000 ? 2 : 1)} s`;
const q3 = (q: Quantiles) => `${ms(q.p50)} / ${ms(q.p95)} / ${ms(q.p99)}`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const cpuOf = (p: PartFigures, role: ProcessRole) =>
  p.processes.filter((x) => x.role === role).reduce((sum, x) => sum + x.cpu, 0);
const perWebhook = (p: PartFigures, role: ProcessRole) => ((cpuOf(p, role) * 1000) / p.accepted).toFixed(2);

/** The deliveries suite's section: Parts 1 to 3. */
export function reportDeliveries(f: DeliveriesFigures): string {
  const { part1: p1, part1Scaled: p1s, part2: p2, part3: p3 } = f;
  const reduced = p2.count < f.requestedRetried;
  const exact = (p: PartFigures) => p.accepted === p.count && !p.missing && !p.surplus && !p.strays && !p.timedOut;
  const workers = `${f.scaledWorkers} worker processes`;
  const side = (label: string, value: (p: PartFigures) => string) => [label, value(p1), value(p1s)];
  const steadySeconds = p3.count / f.steadyPerSecond;
  const parts = [
    [p1, 'Part 1 (1 worker)'],
    [p1s, `Part 1 (${f.scaledWorkers} workers)`],
    [p2, 'Part 2'],
    [p3, 'Part 3'],
  ] as const;
  return [
    `\`temporal server start-dev\` (${f.temporalVersion}, SQLite file, headless) on 127.0.0.1 with npm start's SQLite settings ` +
      `(LOCAL_SQLITE_PRAGMAS of temporal/local-temporal.ts: ${f.sqlitePragmas.map((p) => `\`--sqlite-pragma ${p}\``).join(', ')}); ` +
      'in Parts 1 to 3 the service as separate processes, `partner-service api` and `partner-service worker` (PARTNER_MAX_CONCURRENCY 200, PARTNER_MAX_PER_SECOND 100000, PARTNER_BREAKER_FAILURES 10000, LOG_LEVEL warn), ' +
      'on the bench PostgreSQL; a partner server (node:http, in the bench process) that answers 204 and records when each `webhook-id` arrives. ' +
      `Each webhook is the candidate/new example event (examples/events/) with its own event_id and candidate, so its own ordering key (${n(f.bodyBytes)} bytes as delivered), posted to ` +
      `\`POST /internal/v1/webhooks\` after a warm-up of 20. ` +
      'CPU is user + system time from /proc/<pid>/stat between the first POST and the moment every row of the part was `delivered`; ' +
      'peak RSS is VmRSS sampled every 200 ms. PostgreSQL counts the postmaster and all its backends; ' +
      '"other" is the rest of the machine (other programs running at the same time). ' +
      `Order of the run, on one dev server: Part 1 with one worker process, then with ${f.scaledWorkers} (fresh processes, same task queue), ` +
      "then Parts 3 and 2 with one. The service against the bare workflow is the floor suite's section.",
    '',
    `### Part 1: ${n(p1.count)} webhooks at ${f.concurrency} concurrent POSTs, partner answers 204: 1 and ${workers}`,
    '',
    table(
      ['measure', '>1 worker process', `>${workers}`],
      [
        side(
          'delivered end to end (first 202 to last partner receipt)',
          (p) => `**${p.deliveriesPerSecond.toFixed(1)}/s** (${s(p.endToEndSeconds)})`,
        ),
        side(
          'ingestion (first POST to last 202)',
          (p) => `${(p.accepted / p.ingestSeconds).toFixed(1)}/s (${s(p.ingestSeconds)})`,
        ),
        side('202 to partner receipt, p50 / p95 / p99', (p) => q3(p.latencyMs)),
        side('POST to its 202, p50 / p95 / p99', (p) => q3(p.answerMs)),
        side(
          `service / baseline (the same POSTs from a plain undici loop straight to the partner, ${f.concurrency} concurrent: ${f.baselineRate.toFixed(0)}/s)`,
          (p) => `${(p.deliveriesPerSecond / f.baselineRate).toFixed(4)} ×`,
        ),
        side('CPU ms per webhook: Temporal / API / worker processes (all) / PostgreSQL', (p) =>
          (['temporal', 'api', 'worker', 'postgres'] as const).map((role) => perWebhook(p, role)).join(' / '),
        ),
        side('machine busy (all cores)', (p) => `${busyPercent(p).toFixed(0)} %`),
      ],
    ),
    '',
    '#### 1 worker process',
    '',
    processTable(p1),
    '',
    bottleneck(p1),
    '',
    `#### ${workers}`,
    '',
    processTable(p1s),
    '',
    bottleneck(p1s),
    '',
    `### Part 2: ${n(p2.count)} webhooks whose first attempt the partner answers 500`,
    '',
    reduced
      ? `Reduced from ${n(f.requestedRetried)}: at Part 1's rate (one worker) a retried webhook costs about two deliveries, and only ${n(p2.count)} ` +
        `fit in about ${(f.retryBudgetSeconds / 60).toFixed(0)} minutes.`
      : `All ${n(p2.count)} requested webhooks were run.`,
    '',
    table(
      ['measure', '>value'],
      [
        ['total, first POST to the last partner receipt', s(p2.totalSeconds)],
        ['until every row was `delivered`', s(p2.untilDeliveredSeconds)],
        [
          'ingestion (first POST to last 202)',
          `${(p2.accepted / p2.ingestSeconds).toFixed(1)}/s (${s(p2.ingestSeconds)})`,
        ],
        ['most webhooks waiting on their 10 s timer at once', n(p2.peakWaiting)],
        [
          'delivered on attempt 2 (webhook_attempts) / any attempt 3 or later',
          `${n(p2.deliveredOnSecondAttempt)} / ${n(p2.laterAttempts)}`,
        ],
      ],
    ),
    '',
    processTable(p2),
    '',
    `### Part 3: a steady ${f.steadyPerSecond} webhooks/s for ${steadySeconds.toFixed(0)} s, partner answers 204`,
    '',
    `An open loop: webhook i is posted at start + i × ${(1000 / f.steadyPerSecond).toFixed(0)} ms whatever the answers, ${n(p3.count)} in all; ` +
      "a POST's answer time counts from when it was due, so a slow API shows as latency instead of slowing the load. One worker process." +
      (f.steadyPerSecond > p1.deliveriesPerSecond
        ? ` **${f.steadyPerSecond}/s is above Part 1's capacity (${p1.deliveriesPerSecond.toFixed(1)}/s with one worker)**: the backlog grows all along, ` +
          'so these latencies measure queueing, not the service below capacity.'
        : ''),
    '',
    table(
      ['measure', '>value'],
      [
        ['202 to partner receipt, p50 / p95 / p99', q3(p3.latencyMs)],
        ['POST due to its 202, p50 / p95 / p99', q3(p3.answerMs)],
        [
          'delivered end to end (first 202 to last partner receipt)',
          `${p3.deliveriesPerSecond.toFixed(1)}/s (${s(p3.endToEndSeconds)})`,
        ],
        [
          'ingestion (first POST to last 202)',
          `${(p3.accepted / p3.ingestSeconds).toFixed(1)}/s (${s(p3.ingestSeconds)})`,
        ],
      ],
    ),
    '',
    processTable(p3),
    '',
    bottleneck(p3),
    '',
    actionsTable(f.histories),
    '',
    '### Goals',
    '',
    table(
      ['goal', 'measured', ''],
      [
        [
          `≥ ${GOAL_PER_SECOND} deliveries/s end to end (Part 1, one worker)`,
          `${p1.deliveriesPerSecond.toFixed(1)}/s`,
          verdict(p1.deliveriesPerSecond >= GOAL_PER_SECOND),
        ],
        [
          `≥ ${GOAL_PER_SECOND} deliveries/s end to end (Part 1, ${workers})`,
          `${p1s.deliveriesPerSecond.toFixed(1)}/s`,
          verdict(p1s.deliveriesPerSecond >= GOAL_PER_SECOND),
        ],
        [
          `p99 202 to partner receipt ≤ ${ms(GOAL_STEADY_P99_MS)} at ${f.steadyPerSecond}/s (Part 3)`,
          ms(p3.latencyMs.p99),
          verdict(p3.latencyMs.p99 <= GOAL_STEADY_P99_MS),
        ],
        ...parts.flatMap(([p, name]) => checks(p, name)),
        [
          'Part 2: every webhook delivered on attempt 2, no third POST',
          `${n(p2.deliveredOnSecondAttempt)} of ${n(p2.accepted)}, ${p2.laterAttempts} later attempts`,
          verdict(exact(p2) && p2.deliveredOnSecondAttempt === p2.accepted && p2.laterAttempts === 0),
        ],
      ],
    ),
    ...parts.flatMap(([p, name]) =>
      p.unexpectedAttempts.length
        ? [
            '',
            `Unexpected attempts recorded in ${name} (webhook_attempts):`,
            '',
            ...p.unexpectedAttempts.map((line) => `- ${line}`),
          ]
        : [],
    ),
  ].join('\n');
}

function checks(p: PartFigures, part: string): string[][] {
  const refused = [...p.refused].map(([what, count]) => `${count} × ${what}`).join(', ') || 'none';
  const times = p.expectedReceipts === 1 ? 'exactly once' : `exactly ${p.expectedReceipts} times`;
  return [
    [
      `${part}: every POST answered 202`,
      `${n(p.accepted)} of ${n(p.count)} (other: ${refused})`,
      verdict(p.accepted === p.count),
    ],
    [
      `${part}: partner received each webhook-id ${times}`,
      `${p.missing} fewer, ${p.surplus} more, ${p.strays} unknown ids${p.timedOut ? `; gave up after ${p.timeoutSeconds} s` : ''}`,
      verdict(!p.missing && !p.surplus && !p.strays && !p.timedOut),
    ],
    [
      `${part}: every row of webhook_events \`delivered\``,
      `${n(p.deliveredRows)} of ${n(p.rows)}`,
      verdict(p.rows === p.accepted && p.deliveredRows === p.rows),
    ],
  ];
}

function processTable(p: PartFigures): string {
  const wall = p.untilDeliveredSeconds;
  const ours = p.processes.reduce((sum, x) => sum + (Number.isNaN(x.cpu) ? 0 : x.cpu), 0);
  const row = (label: string, cpu: number, rss?: number) =>
    Number.isNaN(cpu)
      ? [label, 'n/a (not on this machine)', '', '', '']
      : [
          label,
          cpu.toFixed(1),
          ((cpu * 1000) / p.accepted).toFixed(2),
          `${((cpu / wall) * 100).toFixed(0)} %`,
          rss === undefined ? '' : mib(rss),
        ];
  return [
    `Over ${s(wall)} (first POST until every row was delivered), ${n(p.accepted)} webhooks:`,
    '',
    table(
      ['process', '>CPU s', '>CPU ms per webhook', '>CPU % of one core', '>peak RSS'],
      [
        ...p.processes.map((x) => row(x.label, x.cpu, x.peakRss)),
        row('other processes on the machine', Math.max(0, p.machineCpu - ours)),
        row(`whole machine (${os.cpus().length} cores)`, p.machineCpu),
      ],
    ),
  ].join('\n');
}

const busyPercent = (p: PartFigures) => (p.machineCpu / (p.untilDeliveredSeconds * os.cpus().length)) * 100;

/** Names the process that used the most CPU per webhook, and whether it or the machine ran out of CPU. */
function bottleneck(p: PartFigures): string {
  const top = p.processes
    .filter((x) => x.role !== 'bench' && !Number.isNaN(x.cpu))
    .reduce((a, b) => (b.cpu > a.cpu ? b : a));
  const cores = os.cpus().length;
  const busy = busyPercent(p);
  const oneCore = (top.cpu / p.untilDeliveredSeconds) * 100;
  const share = `The largest share of CPU per webhook is the ${top.label}'s (${((top.cpu * 1000) / p.accepted).toFixed(1)} ms, ${oneCore.toFixed(0)} % of one core). `;
  if (busy >= 85)
    return `${share}The machine's ${cores} cores were ${busy.toFixed(0)} % busy on average, so throughput was bound by the machine's CPU.`;
  if (oneCore >= 75) {
    return (
      `${share}It stayed near one full core while the machine's ${cores} cores were only ${busy.toFixed(0)} % busy: its work is largely serial, ` +
      'and it is the bottleneck.'
    );
  }
  return (
    `${share}The machine's ${cores} cores were ${busy.toFixed(0)} % busy on average and no process neared a full core, so the rate is limited by waiting ` +
    '(round trips, timers, polling), not by CPU.'
  );
}

function actionsTable(histories: DeliveriesFigures['histories']): string {
  return [
    '### Temporal actions per delivery',
    '',
    'Counted from each workflow history (`fetchHistory()`), whatever the workflow code does today. Actions as Temporal Cloud bills them: the start, ' +
      'each activity scheduled and each retry of one, local activities (`core_local_activity` markers), timers started, search-attribute upserts, ' +
      'signals and updates.',
    '',
    table(
      [
        'delivery',
        '>POSTs',
        'ends',
        '>events',
        '>workflow tasks completed',
        '>starts',
        '>activities',
        '>activity retries',
        '>local activities',
        '>timers',
        '>upserts',
        '>signals, updates',
        '>**actions**',
      ],
      histories.map(({ label, posts, status, counts: c }) => [
        label,
        posts,
        status,
        c.events,
        c.workflowTasksCompleted,
        c.starts,
        c.activities,
        c.activityRetries,
        c.localActivities,
        c.timers,
        c.upserts,
        c.signalsAndUpdates,
        `**${c.actions}**`,
      ]),
    ),
  ].join('\n');
}
