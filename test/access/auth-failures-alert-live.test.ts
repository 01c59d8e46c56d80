// AuthFailuresBurst on a real Prometheus (as prometheus-live.test.ts) scraping a `partner-service api` process:
// a few refusals on one route stay silent; a burst of requests with a wrong token on another route makes the
// alert pending, then firing after its 2 min `for:` (unchanged), for that route alone. Every refusal is one warn
// line with its reason, route, method and request id, and no line holds the token presented.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { findFreePort } from '../../lib/ports';
import { startCli, waitForExit } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startPrometheus, type PrometheusServer } from '../support/prometheus';
import { tempDir } from '../support/temporal';
import { logLines } from '../support/log-lines';

const RULES = path.join(__dirname, '..', '..', 'deploy', 'prometheus', 'partner-alerts.yml');
const GUESSED = 'guessed-token-0123456789abcdef';
const BURST = 700;
const REFUSAL = 'request refused by an auth check';

describe('AuthFailuresBurst on a real Prometheus scraping an api process', function () {
  this.timeout(300_000);
  /** What `before` started, stopped in reverse order by `after`. */
  const stops: Array<() => Promise<unknown>> = [];
  let [work, url] = ['', ''];
  let db: TestDatabase;
  let api: ReturnType<typeof startCli>;
  let prometheus: PrometheusServer;

  before(async function () {
    this.timeout(120_000);
    work = await tempDir('auth-alert');
    stops.push(() => rm(work, { recursive: true, force: true }));
    db = await createTestDatabase();
    stops.push(() => db.drop());
    const port = await findFreePort();
    api = startCli(
      ['api'],
      { PATH: process.env.PATH, DATABASE_URL: db.url, LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: String(port) },
      work,
      /API listening/,
    );
    stops.push(async () => {
      api.child.kill('SIGKILL');
      await waitForExit(api.child);
    });
    await api.started;
    url = `http://127.0.0.1:${port}`;
    prometheus = await startPrometheus({ work, rulesFile: RULES, targets: [`127.0.0.1:${port}`] });
    stops.push(() => prometheus.stop());
    await eventually(
      'the api scraped and the rule evaluated',
      async () => {
        const health = Object.values(await prometheus.targets());
        const rule = (await prometheus.rules()).find((r) => r.name === 'AuthFailuresBurst');
        return health.length === 1 && health[0] === 'up' && rule?.health === 'ok';
      },
      60_000,
    );
  });

  after(async function () {
    this.timeout(60_000);
    for (const stop of stops.reverse()) await stop();
  });

  const refused = async (route: string, authorization = '') => {
    const res = await fetch(`${url}${route}`, { headers: { authorization } });
    await res.arrayBuffer();
    return res.status;
  };
  const burstAlerts = async () => (await prometheus.alerts()).filter((a) => a.labels.alertname === 'AuthFailuresBurst');

  it('stays silent for a few refusals, and fires for a burst on one route after its 2 min for:', async () => {
    // A route's series starts at its first refusal in a process: rate() counts from that sample on.
    for (let i = 0; i < 10; i++) assert.equal(await refused('/internal/v1/audit'), 401);
    assert.equal(await refused('/internal/v1/partner', `Bearer ${GUESSED}`), 401);
    await eventually(
      'both series scraped',
      async () => (await prometheus.query('partner_service_auth_failures_total')).length === 2,
      30_000,
    );

    const burstFrom = Date.now();
    for (let sent = 0; sent < BURST; sent += 20) {
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () => refused('/internal/v1/partner', `Bearer ${GUESSED}`)),
      );
      assert.deepEqual(new Set(statuses), new Set([401]));
    }
    const burstSeconds = (Date.now() - burstFrom) / 1000;
    await eventually('AuthFailuresBurst pending', async () => (await burstAlerts()).length > 0, 30_000);
    const pendingAt = Date.now();
    await eventually(
      'AuthFailuresBurst firing',
      async () => (await burstAlerts()).some((a) => a.state === 'firing'),
      180_000,
    );
    const firingAfter = (Date.now() - pendingAt) / 1000;
    const alerts = await burstAlerts();
    console.log(
      `      ${BURST} refusals in ${burstSeconds.toFixed(1)} s; pending, then firing ${firingAfter.toFixed(1)} s later: ${JSON.stringify(alerts.map((a) => [a.labels, a.value]))}`,
    );
    assert.ok(firingAfter >= 110, `firing ${firingAfter} s after pending, before the 2 min for:`);
    assert.deepEqual(
      alerts.map((a) => [a.labels, a.state]),
      [[{ alertname: 'AuthFailuresBurst', route: '/internal/v1/partner', severity: 'warning' }, 'firing']],
    );
    assert.ok(Number(alerts[0].value) > 1, alerts[0].value);
    assert.match(
      alerts[0].annotations.description,
      /^[\d.]+ requests a second to \/internal\/v1\/partner were refused \(401 or 403\) over the last 5 min\./,
    );
    assert.deepEqual(
      (await prometheus.query('sum by (reason, route) (partner_service_auth_failures_total)'))
        .map((s) => [s.metric.reason, s.metric.route, s.value])
        .sort(),
      [
        ['invalid_token', '/internal/v1/partner', BURST + 1],
        ['missing_token', '/internal/v1/audit', 10],
      ],
    );

    // One warn line a refusal, and not the token, nor its start.
    const lines = logLines(api.output.stdout);
    const refusals = lines.filter((line) => line.msg === REFUSAL);
    assert.equal(refusals.length, BURST + 11);
    const partnerLines = refusals.filter((line) => line.route === '/internal/v1/partner');
    assert.equal(partnerLines.length, BURST + 1);
    for (const line of partnerLines) {
      assert.deepEqual([line.level, line.reason, line.method, line.status], [40, 'invalid_token', 'GET', 401]);
      assert.match(String(line.request_id), /^[0-9a-f-]{36}$/);
    }
    const all = api.output.stdout + api.output.stderr;
    assert.ok(!all.includes(GUESSED.slice(0, 8)), 'the presented token in the log');
  });
});
