import { table, verdict } from '../harness/render';
import type { FirstTryCost, Ordering } from './first-try-cost';
import { WORKERS, type measureBacklog, type measureManyKeys, type measureOneKey } from './parts';
import type { MutexAlternativeFigures } from './mutex-alternative';

export type ManyKeysRun = Awaited<ReturnType<typeof measureManyKeys>> & {
  readonly round: number;
  readonly cap: number;
  readonly ordering: Ordering;
};

/** The goals of issue 48: the rate on many keys, the empty lane's cost, the drain of an ordered backlog. */
const [GOAL_RATIO, GOAL_MORE_STATEMENTS, GOAL_DRAIN] = [0.95, 2, 0.9];
/** The partner recovery's wakes of a backlog: one per key's held head, give or take a re-held few (the pause-backlog test allows 5). */
const WAKE_SLACK = 5;

export interface OrderingFigures {
  readonly temporal: string;
  readonly webhooks: number;
  readonly keys: number;
  readonly manyKeys: readonly ManyKeysRun[];
  readonly costs: readonly FirstTryCost[];
  readonly costSamples: number;
  readonly oneKeyWebhooks: number;
  readonly oneKey: ReadonlyArray<Awaited<ReturnType<typeof measureOneKey>>>;
  readonly backlog: Awaited<ReturnType<typeof measureBacklog>>;
  readonly backlogCap: number;
  readonly mutex: ReadonlyArray<MutexAlternativeFigures & { readonly name: string }>;
}

const n = (value: number) => value.toLocaleString('en');
const capName = (cap: number) => (cap >= 100_000 ? `${n(cap)}/s (none in effect)` : `${cap}/s`);

export function reportOrdering(f: OrderingFigures): string {
  const caps = [...new Set(f.manyKeys.map((r) => r.cap))];
  const of = (cap: number, round: number, ordering: Ordering) =>
    f.manyKeys.find((r) => r.cap === cap && r.round === round && r.ordering === ordering)!;
  const rounds = [...new Set(f.manyKeys.map((r) => r.round))];
  // Over the rounds: the mean rate on ÷ the mean rate off.
  const meanRate = (cap: number, ordering: Ordering) =>
    rounds.reduce((sum, round) => sum + of(cap, round, ordering).rate, 0) / rounds.length;
  const ratio = (cap: number) => meanRate(cap, 'entity') / meanRate(cap, 'off');
  const cost = (ordering: Ordering) => f.costs.find((c) => c.ordering === ordering)!;
  const [off, on] = [cost('off'), cost('entity')];
  const b = f.backlog;
  const released = b.wakes.get('partnerReleased') ?? 0;
  const turns = b.wakes.get('orderingTurn') ?? 0;
  const drainRatio = b.rate / f.backlogCap;
  return [
    `\`temporal server start-dev\` (${f.temporal}) with npm start's SQLite settings; \`partner-service api\` and ${WORKERS} \`partner-service worker\` processes (the rest as in the deliveries section), ` +
      'the bench PostgreSQL and a loopback partner server answering 204, WEBHOOK_ORDERING set explicitly in every process. Each webhook is the candidate/new example event, ' +
      'its ordering key `candidate:<data.candidate.id>`. Every measurement runs on a dev server and service of its own, after a warm-up of 20.',
    '',
    `### Many keys: ${n(f.webhooks)} webhooks over ${n(Math.min(f.webhooks, f.keys))} keys`,
    '',
    `Deliveries per second from the first 202 to the last arrival, in ${rounds.length} round${rounds.length > 1 ? 's' : ''}, on and off alternating which goes first; CPU a delivery of the ${WORKERS} workers and of PostgreSQL.`,
    '',
    table(
      [
        'partner cap',
        '>round',
        'first',
        '>off: deliveries/s',
        '>on: deliveries/s',
        '>on ÷ off',
        '>worker CPU a delivery, off / on',
        '>PostgreSQL CPU a delivery, off / on',
      ],
      caps.flatMap((cap) =>
        rounds.map((round) => {
          const [o, e] = [of(cap, round, 'off'), of(cap, round, 'entity')];
          const first = f.manyKeys.find((r) => r.cap === cap && r.round === round)!.ordering;
          return [
            capName(cap),
            round,
            first === 'entity' ? 'on' : 'off',
            o.rate.toFixed(1),
            e.rate.toFixed(1),
            (e.rate / o.rate).toFixed(3),
            `${o.workerCpuMs.toFixed(2)} / ${e.workerCpuMs.toFixed(2)} ms`,
            `${o.postgresCpuMs.toFixed(2)} / ${e.postgresCpuMs.toFixed(2)} ms`,
          ];
        }),
      ),
    ),
    '',
    ...caps
      .map(
        (cap) =>
          `At ${capName(cap)}: on ÷ off over the rounds **${ratio(cap).toFixed(3)} ×** (goal ≥ ${GOAL_RATIO} ×: ${verdict(ratio(cap) >= GOAL_RATIO)}).`,
      )
      .flatMap((line) => [line, '']),
    '### The cost of an empty lane',
    '',
    `A first-try delivery with no other webhook of its key, ${f.costSamples} of each setting one at a time after one of warm-up: the API and both workers in the bench process on one knex ` +
      '(the method of test/ordering/entity-ordering.test.ts), whose `query` events count the statements that name the webhook; the history of each run.',
    '',
    table(
      ['measure', '>off', '>on', 'goal'],
      [
        [
          'history events of a first-try delivery',
          off.events.toFixed(1),
          on.events.toFixed(1),
          `unchanged: ${verdict(on.events === off.events)}`,
        ],
        [
          'PostgreSQL statements a delivery',
          off.statements.toFixed(1),
          on.statements.toFixed(1),
          `at most ${GOAL_MORE_STATEMENTS} more: ${verdict(on.statements - off.statements <= GOAL_MORE_STATEMENTS)}`,
        ],
      ],
    ),
    '',
    `### One key: ${n(f.oneKeyWebhooks)} webhooks on one key`,
    '',
    'WEBHOOK_ORDERING=entity, no cap in effect; the webhooks are posted during a pause, so that each waits its turn behind the one before, then resume; the partner answers each POST after the latency given. ' +
      'The cycle is the mean time from one arrival at the partner to the next; ' +
      "the round trip, the mean of the attempts' durations as the worker times them (POST sent to answer, webhook_attempts.duration_ms); the overhead a delivery, cycle − round trip: " +
      'the rate is 1 / (round trip + overhead).',
    '',
    table(
      [
        'partner latency',
        '>deliveries/s',
        '>cycle',
        '>round trip',
        '>overhead a delivery',
        '>keys out of sequence order',
      ],
      f.oneKey.map((r) => [
        `${r.latencyMs} ms`,
        r.rate.toFixed(1),
        `${r.cycleMs.toFixed(1)} ms`,
        `${r.roundTripMs.toFixed(1)} ms`,
        `**${r.overheadMs.toFixed(1)} ms**`,
        r.order.outOfOrder,
      ]),
    ),
    '',
    `### Pause with a backlog: ${n(b.count)} webhooks over ${b.keys} keys`,
    '',
    `WEBHOOK_ORDERING=entity at PARTNER_MAX_PER_SECOND ${f.backlogCap}: a pause through \`POST /internal/v1/partner/pause\`, the webhooks posted, and once every key's head is held, ` +
      '`POST /internal/v1/partner/resume`; the drain runs from the resume to the last arrival. Wakes are the signals the runs received, from their histories: ' +
      '`partnerReleased` from the partner recovery, `orderingTurn` when the webhook ahead settled.',
    '',
    table(
      ['measure', '>figure', 'goal'],
      [
        ['webhooks held at the resume (the heads)', b.heldHeads, `${b.keys}`],
        [
          `drain rate / cap`,
          `**${drainRatio.toFixed(2)} ×** (${b.rate.toFixed(1)}/s, ${b.drainSeconds.toFixed(1)} s)`,
          `≥ ${GOAL_DRAIN} ×: ${verdict(drainRatio >= GOAL_DRAIN)}`,
        ],
        [
          'wakes by the partner recovery (`partnerReleased`)',
          released,
          `about ${b.keys}, not ${n(b.count)}: ${verdict(released <= b.keys + WAKE_SLACK)}`,
        ],
        [
          'wakes by a settled webhook ahead (`orderingTurn`)',
          turns,
          `${n(b.count - b.keys)}, one per webhook behind a head`,
        ],
        [
          'keys out of sequence order',
          `${b.order.outOfOrder} of ${b.order.keys}`,
          `0: ${verdict(b.order.outOfOrder === 0 && b.order.keys === b.keys)}`,
        ],
      ],
    ),
    '',
    '### The alternative: a lock workflow per key',
    '',
    "Temporal's mutex sample, written small (bench/ordering/mutex-workflow/): each item signals-with-start its key's lock workflow, waits for its grant, " +
      'makes one local-activity POST and signals the release; the lock completes when its queue is empty. Against the same item with no lock (6 events, as an ' +
      `unordered or empty-lane webhook of the service). In process, ${f.mutex[0]?.concurrency ?? 0} items started at once, each variant on a fresh dev server. ` +
      "Per item: the events of its history and its share of the lock runs' histories.",
    '',
    table(
      [
        'case',
        'variant',
        '>items/s',
        '>events an item (item + lock)',
        '>signals an item',
        '>workflow tasks an item',
        '>most POSTs of one key at once',
        '>pairs granted out of start order',
      ],
      f.mutex.flatMap((m) =>
        [m.mutex, m.bare].map((v) => [
          `${m.name}: ${n(m.items)} items over ${n(m.keys)} key${m.keys > 1 ? 's' : ''}`,
          v.variant === 'mutex' ? 'lock workflow' : 'no lock',
          v.itemsPerSecond.toFixed(1),
          `${v.perItem.events.toFixed(1)} (${v.perItem.itemEvents.toFixed(1)} + ${v.perItem.lockEvents.toFixed(1)})`,
          v.perItem.signals.toFixed(2),
          v.perItem.workflowTasks.toFixed(2),
          v.maxConcurrentPerKey,
          m.keys === 1 ? v.outOfStartOrder : '–',
        ]),
      ),
    ),
  ].join('\n');
}
