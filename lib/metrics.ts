import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PARTNER_STATES, type PartnerState } from './partner-states';
import { INGEST_REFUSAL_REASONS } from './vocabulary';

/** The process's one Prometheus registry; `GET /metrics` serves it. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'partner_service_' });

/**
 * `route` is the matched route pattern (e.g. /v1/companies/:company_pk/users), never a raw path, to bound cardinality.
 */
export const httpRequestDuration = new Histogram({
  name: 'partner_service_http_request_duration_seconds',
  help: 'HTTP request duration by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metricsRegistry],
});

/** One per POST to the partner; `outcome` is `2xx`, `3xx` … `6xx`, or the error class (`timeout`, `reset`, …). */
export const webhookAttempts = new Counter({
  name: 'partner_service_webhook_attempts_total',
  help: 'Webhook delivery attempts by event type, action and outcome',
  labelNames: ['event_type', 'action', 'outcome'] as const,
  registers: [metricsRegistry],
});

/** The time of each POST to the partner, labelled like the attempt counter. */
export const webhookAttemptDuration = new Histogram({
  name: 'partner_service_webhook_attempt_duration_seconds',
  help: 'Duration of each webhook POST to the partner by event type, action and outcome',
  labelNames: ['event_type', 'action', 'outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [metricsRegistry],
});

/**
 * A gauge counted from PostgreSQL on each scrape, so every process reports the same whole-deployment figure
 * however many workers run; with PostgreSQL down the scrape still answers, with the last count (/readyz says
 * why). Returns the setter of its source, which a process with a database connection that runs the worker calls.
 */
function databaseCountGauge(name: string, help: string): (count: () => Promise<number>) => void {
  let source: (() => Promise<number>) | undefined;
  new Gauge({
    name,
    help,
    registers: [metricsRegistry],
    async collect() {
      if (!source) return;
      await source().then(
        (count) => this.set(count),
        () => undefined,
      );
    },
  });
  return (count) => (source = count);
}

/** Deliveries whose last attempt failed and whose next one waits on a durable timer. */
export const countWaitingWebhooksWith = databaseCountGauge(
  'partner_service_webhooks_waiting',
  'Webhook deliveries waiting on a retry timer (the whole deployment, from PostgreSQL)',
);

/**
 * A counter of one label whose every value is exported at 0 from the start: increase() cannot see a series'
 * first sample, so the first failed delivery, probe or purge would be missed by the alert rules.
 */
function counterOf<L extends string>(name: string, help: string, label: L, values: readonly string[]): Counter<L> {
  const counter = new Counter({ name, help, labelNames: [label] as const, registers: [metricsRegistry] });
  for (const value of values) counter.inc({ [label]: value } as Record<L, string>, 0);
  return counter;
}

/** Deliveries that ended, by final status: what the failing-deliveries alert reads. */
export const webhooksFinished = counterOf(
  'partner_service_webhooks_finished_total',
  'Webhook deliveries that ended, by final status',
  'status',
  ['delivered', 'failed', 'cancelled'],
);

/** Wakes of queued ordered webhooks: sent when the webhook ahead settled, or by the sweep after a lost one. */
export const orderingWakes = counterOf(
  'partner_service_ordering_wakes_total',
  'Wakes sent to queued ordered webhooks, by source',
  'source',
  ['settle', 'sweep'],
);

/** Ordered webhooks that failed finally, leaving a gap in their key's sequence. */
export const orderingGaps = new Counter({
  name: 'partner_service_ordering_gaps_total',
  help: 'Gaps left in ordering keys: ordered webhooks that failed finally',
  registers: [metricsRegistry],
});

/** Ordered webhooks queued behind the head of their key (the whole deployment, from PostgreSQL). */
export const countQueuedWebhooksWith = databaseCountGauge(
  'partner_service_ordering_queued',
  'Ordered webhooks waiting behind an unsettled webhook of their key (the whole deployment, from PostgreSQL)',
);

/** The longest an ordered webhook has waited behind its key's head so far, in seconds (0 with none queued). */
export const observeOldestQueuedWith = databaseCountGauge(
  'partner_service_ordering_oldest_queued_seconds',
  'Seconds the longest-queued ordered webhook has waited behind its key (head-of-line wait; 0 when none is queued)',
);

/**
 * How long the longest-blocked ordered head has been blocked, in seconds (0 with none): what OrderingKeyBlocked reads.
 */
export const observeOldestBlockedWith = databaseCountGauge(
  'partner_service_ordering_oldest_blocked_seconds',
  'Seconds the longest-blocked ordered head has waited for an operator (WEBHOOK_ORDERING_ON_FAILURE=block; 0 ' +
    'when none is blocked)',
);

/** Probes of a tripped breaker, by what the partner did: `answered` closes the breaker, `failing` keeps it. */
export const partnerProbes = counterOf(
  'partner_service_partner_probes_total',
  'Probes a tripped breaker sent to the partner, by outcome',
  'outcome',
  ['answered', 'failing'],
);

/** The partner gate as the gauges show it: one read of PostgreSQL per scrape. */
export interface PartnerSnapshot {
  readonly state: PartnerState;
  readonly holdSeconds: number;
  readonly held: number;
  readonly trips: number;
  readonly maxPerSecond: number;
}

/**
 * One read shared by the gauges of a scrape: the gauges collect in one turn of the event loop, so the read in
 * flight is reused until that turn ends. It rejects as the read does (a gauge then keeps its last value).
 */
export function oneReadPerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => (inFlight ??= read().finally(() => setImmediate(() => (inFlight = undefined))));
}

let readPartner: (() => Promise<PartnerSnapshot>) | undefined;

/** With PostgreSQL down the partner gauges keep their last values. */
const partnerSnapshot = oneReadPerScrape(async (): Promise<PartnerSnapshot | undefined> =>
  readPartner?.().catch(() => undefined),
);

const partnerGauge = (name: string, help: string, value: (snapshot: PartnerSnapshot) => number) =>
  new Gauge({
    name,
    help,
    registers: [metricsRegistry],
    async collect() {
      const snapshot = await partnerSnapshot();
      if (snapshot) this.set(value(snapshot));
    },
  });

/** 1 for the partner gate's current state, 0 for the others (the whole deployment, from PostgreSQL). */
export const partnerState = new Gauge({
  name: 'partner_service_partner_state',
  help: 'The partner gate: 1 for its current state (active, paused, tripped, throttled), 0 for the others',
  labelNames: ['state'] as const,
  registers: [metricsRegistry],
  async collect() {
    const snapshot = await partnerSnapshot();
    if (snapshot) for (const state of PARTNER_STATES) this.set({ state }, state === snapshot.state ? 1 : 0);
  },
});

export const partnerHoldSeconds = partnerGauge(
  'partner_service_partner_hold_seconds',
  'Seconds since the hold in force began (pause, breaker or Retry-After); 0 while active',
  (s) => s.holdSeconds,
);
export const webhooksHeld = partnerGauge(
  'partner_service_webhooks_held',
  'Deliveries held by the partner gate, their attempt not spent',
  (s) => s.held,
);
export const partnerBreakerTrips = partnerGauge(
  'partner_service_partner_breaker_trips',
  'Times the breaker has tripped (monotonic, the whole deployment, from PostgreSQL)',
  (s) => s.trips,
);
export const partnerMaxPerSecond = partnerGauge(
  'partner_service_partner_max_per_second',
  'The POST rate cap in force for every worker together',
  (s) => s.maxPerSecond,
);

/** Gives the partner gauges their source: a process with a database connection that runs the worker. */
export function observePartnerWith(read: () => Promise<PartnerSnapshot>): void {
  readPartner = read;
}

/** What the retention purge removed: `body` (a body and its excerpts) or `row` (a webhook and its attempts). */
export const retentionPurged = counterOf(
  'partner_service_retention_purged_total',
  'Webhook bodies removed and rows deleted by the retention purge, by kind (body, row)',
  'kind',
  ['body', 'row'],
);

/** Counts one purge batch. */
export function countPurged(batch: { readonly bodiesRemoved: number; readonly rowsDeleted: number }): void {
  if (batch.bodiesRemoved) retentionPurged.inc({ kind: 'body' }, batch.bodiesRemoved);
  if (batch.rowsDeleted) retentionPurged.inc({ kind: 'row' }, batch.rowsDeleted);
}

let readOldestBody: (() => Promise<Date | null>) | undefined;

/**
 * How long ago the oldest body still stored of a finished webhook finished (0 with none): above the payload
 * retention, the purge is not keeping up or not running. One index read per scrape, the whole deployment.
 */
export const oldestStoredBodySeconds = new Gauge({
  name: 'partner_service_oldest_stored_body_age_seconds',
  help:
    'Age of the oldest stored body of a finished webhook since it finished, in seconds (0 when none; from ' +
    'PostgreSQL)',
  registers: [metricsRegistry],
  async collect() {
    if (!readOldestBody) return;
    await readOldestBody().then(
      (finishedAt) => this.set(finishedAt ? Math.max(0, (Date.now() - finishedAt.getTime()) / 1000) : 0),
      () => undefined,
    );
  },
});

/** WEBHOOK_PAYLOAD_RETENTION_DAYS in seconds, so an alert compares the oldest stored body with the policy in force. */
export const payloadRetentionSeconds = new Gauge({
  name: 'partner_service_payload_retention_seconds',
  help: 'The payload retention in force (WEBHOOK_PAYLOAD_RETENTION_DAYS), in seconds; 0 in a process without a worker',
  registers: [metricsRegistry],
});

/**
 * Gives the oldest-body gauge its source and the retention it is compared with: a process with a database
 * connection that runs the worker.
 */
export function observeOldestBodyWith(read: () => Promise<Date | null>, payloadRetentionDays: number): void {
  readOldestBody = read;
  payloadRetentionSeconds.set(payloadRetentionDays * 86_400);
}

/** Webhook starts this api process has in flight (bounded by INGEST_MAX_STARTS_IN_FLIGHT). */
export const ingestStartsInFlight = new Gauge({
  name: 'partner_service_ingest_starts_in_flight',
  help: 'Webhook starts (POST /internal/v1/webhooks) this api process has in flight',
  registers: [metricsRegistry],
});

/** Ingestions answered 503, by `reason`: the same code the answer's body carries. */
export const ingestRefusals = counterOf(
  'partner_service_ingest_refusals_total',
  'Webhook ingestions answered 503, by reason',
  'reason',
  INGEST_REFUSAL_REASONS,
);

/**
 * Stored webhooks that have had no run for longer than WEBHOOK_START_DOUBT_SECONDS: their start's outcome is
 * not known yet. The worker resolves them; a count that stays above 0 means it cannot (docs/ingestion.md).
 */
export const countStartsInDoubtWith = databaseCountGauge(
  'partner_service_webhook_starts_in_doubt',
  'Stored webhooks without a run for longer than WEBHOOK_START_DOUBT_SECONDS (the whole deployment, from PostgreSQL)',
);

/**
 * Erasures still pending 15 minutes after they were requested (ERASURE_OVERDUE_SECONDS): their record's
 * `pending_reason` says why, and ErasureOverdue alerts (docs/personal-data.md#stuck-erasures).
 */
export const countOverdueErasuresWith = databaseCountGauge(
  'partner_service_erasures_overdue',
  'Erasures pending for more than 15 minutes since their request (the whole deployment, from PostgreSQL)',
);

/**
 * How the worker resolved a start in doubt: `recorded` (Temporal had the run) or `removed` (it had none: the row went).
 */
export const webhookStartResolutions = counterOf(
  'partner_service_webhook_start_resolutions_total',
  'Webhook starts in doubt the worker resolved, by outcome (recorded, removed)',
  'outcome',
  ['recorded', 'removed'],
);

/**
 * Requests refused with 401 or 403 by an auth check, by `reason` (AUTH_FAILURE_REASONS) and `route`, the matched
 * route pattern: never the raw path, which for the codec's UI form carries the token.
 */
export const authFailures = new Counter({
  name: 'partner_service_auth_failures_total',
  help: 'Requests refused with 401 or 403 by an authentication or scope check, by reason and route pattern',
  labelNames: ['reason', 'route'] as const,
  registers: [metricsRegistry],
});

let sdkMetricsUrl: string | undefined;

/** Where the Temporal SDK's own Prometheus exporter listens (loopback), so /metrics can include its series. */
export function includeSdkMetricsFrom(url: string): void {
  sdkMetricsUrl = url;
}

/** This process's series, then the Temporal SDK's when a worker runs here: one scrape shows both. */
export async function metricsText(): Promise<string> {
  const own = await metricsRegistry.metrics();
  if (!sdkMetricsUrl) return own;
  try {
    const response = await fetch(sdkMetricsUrl, { signal: AbortSignal.timeout(2000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return `${own}\n${await response.text()}`;
  } catch (error) {
    // The service's own series still answer; the gap in temporal_* series shows the exporter's trouble.
    return (
      `${own}\n# the Temporal SDK's metrics are unavailable: ` +
      `${error instanceof Error ? error.message : String(error)}\n`
    );
  }
}
