// The alert rules on a real Prometheus (Debian's prometheus 2.42, like promtool) that scrapes a freshly started
// deployment: `partner-service api` and `partner-service worker` on a dev server and PostgreSQL, every series
// seconds old. A healthy phase where no rule's expression holds (no alert even pending), so no `for:` can ever
// elapse, after the seconds where the worker's first polls are still open; then the partner
// answers 503, the breaker trips after PARTNER_BREAKER_FAILURES=3, and PartnerBreakerTripped must fire within
// 2 minutes, with no history before the trip to compare with.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { findFreePort } from '../../lib/ports';
import type { DevServer } from '../../temporal/dev-server';
import companySignup from '../fixtures/events/company-signup.json';
import { withOwnEntity } from '../support/own-entity';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startPrometheus, type PrometheusAlert, type PrometheusServer } from '../support/prometheus';
import { serviceProcesses } from '../support/service-processes';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { DEFAULT_TASK_QUEUE } from '../../lib/config';
import { INTERNAL_TOKEN } from '../support/tokens';

const RULES = path.join(__dirname, '..', '..', 'deploy', 'prometheus', 'partner-alerts.yml');
// The task queue the rules name (NoWorkerPolling): the worker must poll it for those rules to see it.
const TASK_QUEUE = DEFAULT_TASK_QUEUE;
const HEALTHY_SECONDS = 65;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nameOf = (alert: PrometheusAlert) => [alert.labels.alertname, alert.labels.signal].filter(Boolean).join('/');

describe('alert rules on a real Prometheus scraping a new deployment (api and worker processes)', function () {
  let work: string;
  let server: DevServer;
  let serverPort: number;
  let db: TestDatabase;
  let partner: PartnerServer;
  let prometheus: PrometheusServer | undefined;
  let api: string;
  let partnerStatus = 204;

  const processes = serviceProcesses(
    () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url }),
    {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      PARTNER_TIMEOUT_MS: '3000',
      PARTNER_BREAKER_FAILURES: '3',
      PARTNER_PROBE_INTERVAL_MS: '5000',
    },
  );

  const internal = (route: string, body?: object) =>
    fetch(`${api}/internal/v1${route}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, ...(body && { 'content-type': 'application/json' }) },
      ...(body && { body: JSON.stringify(body) }),
    });

  /** Sends `count` webhooks through the API; each must be accepted (202). */
  async function send(count: number, prefix: string): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const response = await internal(
        '/webhooks',
        withOwnEntity({ ...companySignup, event_id: `${prefix}-${i}-${randomUUID()}` }),
      );
      const body = (await response.json()) as { webhook_id: string };
      assert.equal(response.status, 202, JSON.stringify(body));
      ids.push(body.webhook_id);
    }
    return ids;
  }

  before(async function () {
    this.timeout(120_000);
    work = await tempDir('prometheus-live');
    server = await startTestDevServer();
    serverPort = Number(server.address.split(':').pop());
    db = await createTestDatabase();
    partner = await startPartnerServer((_req, res) => res.writeHead(partnerStatus).end());
    api = await processes.startApi(TASK_QUEUE);
    const workerPort = await findFreePort();
    await processes.startWorker(TASK_QUEUE, { WORKER_HTTP_PORT: String(workerPort) });
    const targets = [new URL(api).host, `127.0.0.1:${workerPort}`];
    prometheus = await startPrometheus({ work, rulesFile: RULES, targets });
    await eventually(
      'both targets up',
      async () => {
        const health = await prometheus!.targets();
        return targets.every((t) => health[`http://${t}/metrics`] === 'up');
      },
      30_000,
    );
  });

  after(async function () {
    this.timeout(60_000);
    await prometheus?.stop();
    await processes.stopAll();
    await partner?.close();
    await db?.drop();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it(`no rule's expression holds on a healthy new deployment delivering webhooks (${HEALTHY_SECONDS} s, past the 1 min for: clauses)`, async function () {
    this.timeout((HEALTHY_SECONDS + 120) * 1000);
    const ids = await send(3, 'healthy');
    await eventually(
      '3 delivered',
      async () =>
        Number(
          (await db.knex('webhook_events').whereIn('id', ids).where({ status: 'delivered' }).count({ count: '*' }))[0]
            .count,
        ) === 3,
      30_000,
    );
    // Before the worker's SDK reports its pollers, and before its first poll completes, NoWorkerPolling's
    // absent and no_polls hold, pending for their 5 min: seconds at a deployment's start. Nothing else may.
    const startup = new Map<string, PrometheusAlert>();
    await eventually(
      'the start-up pending alerts cleared',
      async () => {
        const active = await prometheus!.alerts();
        for (const alert of active) startup.set(`${nameOf(alert)} ${alert.state}`, alert);
        return active.length === 0;
      },
      60_000,
    );
    assert.deepEqual(
      [...startup.keys()].filter((key) => !/^NoWorkerPolling\/(absent|no_polls) pending$/.test(key)),
      [],
    );
    const seen = new Map<string, PrometheusAlert>();
    const until = Date.now() + HEALTHY_SECONDS * 1000;
    while (Date.now() < until) {
      for (const alert of await prometheus!.alerts()) seen.set(`${nameOf(alert)} ${alert.state}`, alert);
      await sleep(1000);
    }
    assert.equal(partner.requests.filter((r) => r.method === 'POST').length, 3);
    // Not vacuous: every rule loaded and evaluated, over the series it reads, from both processes.
    const rules = await prometheus!.rules();
    assert.equal(rules.length, 13);
    assert.deepEqual(
      rules.filter((rule) => rule.health !== 'ok'),
      [],
    );
    const sample = async (expr: string) => (await prometheus!.query(expr)).map((s) => s.value);
    assert.deepEqual(await sample('max(partner_service_partner_state{state="active"})'), [1]);
    // OrderingKeyBlocked's series: read from PostgreSQL by the worker, 0 with nothing blocked.
    assert.deepEqual(await sample('max(partner_service_ordering_oldest_blocked_seconds)'), [0]);
    assert.deepEqual(
      await sample('count(temporal_num_pollers{task_queue="partner-webhooks",poller_type="workflow_task"})'),
      [1],
    );
    // Exported at 0 from each process's start, by the API and the worker alike.
    assert.deepEqual(await sample('count(partner_service_webhooks_finished_total{status="failed"} == 0)'), [2]);
    assert.deepEqual(await sample('sum(partner_service_webhook_attempts_total{outcome="2xx"})'), [3]);
    assert.deepEqual(await sample('count by (job) (up == 1)'), [2]);
    const polls = await prometheus!.query(
      '{__name__=~"temporal_workflow_task_queue_poll_(empty|succeed)_total",task_queue="partner-webhooks"}',
    );
    console.log(
      `      start-up: ${JSON.stringify([...startup.keys()])}; then healthy for ${HEALTHY_SECONDS} s: ${JSON.stringify([...seen.keys()])}; ` +
        `workflow-task polls of partner-webhooks: ${JSON.stringify(polls.map((p) => [p.metric.__name__, p.value]))}`,
    );
    assert.deepEqual([...seen.values()], [], 'no alert pending or firing');
  });

  it('PartnerBreakerTripped fires within 2 minutes of a trip on series minutes old, and no other rule fires', async function () {
    this.timeout(240_000);
    partnerStatus = 503;
    await send(5, 'outage');
    await eventually(
      'the breaker trips',
      async () => ((await (await internal('/partner')).json()) as { state: string }).state === 'tripped',
      60_000,
    );
    // The trip's own time, written by the claim that tripped it.
    const trippedAt = (
      (await db.knex('partner_gate').where({ task_queue: TASK_QUEUE }).first('tripped_at')) as { tripped_at: Date }
    ).tripped_at.getTime();
    let firing: PrometheusAlert[] = [];
    await eventually(
      'PartnerBreakerTripped firing',
      async () => {
        firing = (await prometheus!.alerts()).filter((a) => a.state === 'firing');
        return firing.some((a) => a.labels.alertname === 'PartnerBreakerTripped');
      },
      120_000,
    );
    const seconds = (Date.now() - trippedAt) / 1000;
    const active =
      (Date.parse(firing.find((a) => a.labels.alertname === 'PartnerBreakerTripped')!.activeAt) - trippedAt) / 1000;
    console.log(
      `      PartnerBreakerTripped active ${active.toFixed(1)} s and seen firing ${seconds.toFixed(1)} s after the trip: ${JSON.stringify(firing)}`,
    );
    assert.ok(seconds <= 120, `fired ${seconds} s after the trip`);
    assert.deepEqual(
      firing.map((a) => ({ labels: a.labels, value: a.value })),
      [{ labels: { alertname: 'PartnerBreakerTripped', severity: 'warning' }, value: '1e+00' }],
    );
    assert.equal(
      firing[0].annotations.description,
      'The breaker is tripped, or tripped in the last 10 min, after failing answers in a row. Deliveries are held, their attempts unspent, until a probe is answered; PartnerHeldTooLong follows if that takes 15 min.',
    );
  });
});
