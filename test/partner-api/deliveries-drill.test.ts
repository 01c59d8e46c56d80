// The partner's read side on real processes: `partner-service api` and `worker`, a Temporal dev server, a
// loopback partner endpoint whose answers the test sets, and the CLI for the apps. An app with deliveries:read
// lists only its companies' webhooks; another company's is 404; an app without the scope is 403 naming it; a
// revoked app is refused within 5 s; explanations are observed live on real deliveries (retry_scheduled after a
// 503, queued_behind, paused_by_operator, paused_by_partner, delivered, breaker_open) and the health figures equal the log's rows.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import candidateNew from '../fixtures/events/candidate-new.json';
import { runCli } from '../support/cli';
import { eventually } from '../support/eventually';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from '../support/service-processes';
import { INTERNAL_TOKEN } from '../support/tokens';
import { insertCompany } from '../listings/support';

/** The drill's task queue, and how many failing answers in a row open the breaker. */
const [QUEUE, BREAKER_FAILURES] = ['partner-read-drill', 3] as const;

describe('partner API drill: deliveries and why, on real processes', function () {
  this.timeout(180_000);
  let fixtures: StartedServiceFixtures;
  let api: string;
  /** The status the partner answers each POST with; 204 unless the drill says otherwise. */
  let answer = 204;
  const processes = serviceProcesses(() => fixtures.setting(), {
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
    PARTNER_TIMEOUT_MS: '3000',
    PARTNER_BREAKER_FAILURES: String(BREAKER_FAILURES),
  });
  const cliJson = async (...args: string[]) => {
    const result = await runCli(args, processes.common(QUEUE), fixtures.work);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, string>;
  };
  let reader: Record<string, string>;

  before(async () => {
    fixtures = await startServiceFixtures('partner-read-drill', (_req, res) => res.writeHead(answer).end());
    for (const company of ['acme', 'globex']) await insertCompany(fixtures.db.knex, company);
    api = await processes.startApi(QUEUE);
    await processes.startWorker(QUEUE);
    const app = await cliJson(
      'apps',
      'create',
      '--name',
      'reader',
      '--company',
      'acme',
      '--scope',
      'deliveries:read',
      '--json',
    );
    reader = { 'x-app-id': app.app_id, 'x-app-key': app.app_key };
  });
  after(async () => stopServiceFixtures(processes, fixtures ?? {}));

  const partnerGet = async (headers: Record<string, string>, route: string) => {
    const response = await fetch(`${api}/partner/v1${route}`, { headers });
    const text = await response.text();
    return { status: response.status, text, body: text ? JSON.parse(text) : undefined };
  };
  const internal = async (route: string, body?: object) => {
    const response = await fetch(`${api}/internal/v1${route}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}`, ...(body && { 'content-type': 'application/json' }) },
      ...(body && { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  /** Sends a candidate event of `company` about candidate `candidate` (its ordering key); its webhook id. */
  const send = async (company: string, candidate: string = randomUUID()) => {
    const event = structuredClone(candidateNew) as any;
    event.event_id = `drill-${randomUUID()}`;
    event.data.company.id = company;
    event.data.candidate.id = candidate;
    const accepted = await internal('/webhooks', event);
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    return accepted.body.webhook_id as string;
  };
  /** Polls the webhook's view until its explanation is `code` (generous deadline, no fixed sleep); the view. */
  const explained = async (webhookId: string, code: string, timeoutMs = 45_000) => {
    let last: any;
    await eventually(
      `${webhookId} explained as ${code}`,
      async () => {
        last = (await partnerGet(reader, `/webhooks/${webhookId}`)).body;
        return last?.explanation?.code === code;
      },
      timeoutMs,
    ).catch((error) => {
      throw new Error(`${error.message}; last: ${JSON.stringify(last?.explanation)}`);
    });
    return last;
  };

  it('lists only its companies, hides the others (404), refuses without the scope, explains live, counts health', async () => {
    // A 503 first: retry_scheduled, naming what the attempt got; a second webhook of its key queues behind it.
    answer = 503;
    const first = await send('acme', 'cand-drill-1');
    const retrying = await explained(first, 'retry_scheduled');
    assert.match(retrying.explanation.text, /^Attempt 1 \(.*\) got HTTP 503; the next attempt is at /);
    assert.equal(retrying.attempts[0].http_status, 503);
    assert.equal(retrying.attempts[0].error_class, 'http');
    const second = await send('acme', 'cand-drill-1');
    const queued = await explained(second, 'queued_behind');
    assert.ok(queued.explanation.text.includes(first), queued.explanation.text);
    assert.deepEqual([queued.ordering_key, queued.sequence], ['candidate:cand-drill-1', 2]);
    answer = 204;
    assert.equal((await explained(first, 'delivered')).attempts.length, 2);
    await explained(second, 'delivered');

    // Another company's webhook: absent from the list, 404 like an unknown id.
    const theirs = await send('globex');
    const listed = await partnerGet(reader, '/webhooks?limit=100');
    assert.equal(listed.status, 200);
    const listedIds = listed.body.results.map((row: { id: string }) => row.id);
    assert.ok(listedIds.includes(first) && listedIds.includes(second));
    assert.ok(listed.body.results.every((row: { company_id: string }) => row.company_id === 'acme'));
    assert.ok(!listedIds.includes(theirs));
    const hidden = await partnerGet(reader, `/webhooks/${theirs}`);
    assert.deepEqual([hidden.status, hidden.text], [404, '{"detail":"Not found."}']);

    // Without the scope: 403 naming it.
    const lister = await cliJson('apps', 'create', '--name', 'lister', '--company', 'acme', '--json');
    const refused = await partnerGet({ 'x-app-id': lister.app_id, 'x-app-key': lister.app_key }, '/webhooks');
    assert.equal(refused.status, 403);
    assert.equal(refused.body.reason, 'missing_scope');
    assert.match(refused.body.detail, /"deliveries:read"/);

    // The operator's pause holds a new webhook: paused_by_operator; resumed, it is delivered.
    assert.equal((await internal('/partner/pause', { reason: 'drill maintenance' })).status, 200);
    const paused = await send('acme');
    const held = await explained(paused, 'paused_by_operator');
    assert.match(held.explanation.text, /\(reason: drill maintenance\)/);
    // Its claim finds the gate closed: the row is held, no attempt spent.
    await eventually('the paused webhook to be held', async () => {
      const view = (await partnerGet(reader, `/webhooks/${paused}`)).body;
      return view.status === 'held' && view.attempts.length === 0 && view.explanation.code === 'paused_by_operator';
    });
    assert.equal((await internal('/partner/resume', {})).status, 200);
    await explained(paused, 'delivered', 60_000);

    // The partner's own pause, through the partner API, holds one too: paused_by_partner; its resume delivers it.
    const keeper = await cliJson(
      'apps',
      'create',
      '--name',
      'keeper',
      '--company',
      'acme',
      '--scope',
      'endpoint:manage',
      '--json',
    );
    const keeperPost = (route: string, body: object) =>
      fetch(`${api}/partner/v1${route}`, {
        method: 'POST',
        headers: { 'x-app-id': keeper.app_id, 'x-app-key': keeper.app_key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    assert.equal((await keeperPost('/endpoint/pause', { reason: 'our deploy' })).status, 200);
    const partnerHeld = await send('acme');
    const ours = await explained(partnerHeld, 'paused_by_partner');
    assert.match(ours.explanation.text, /\(reason: our deploy\)/);
    assert.ok(ours.explanation.text.includes(`app:${keeper.app_id}`), ours.explanation.text);
    assert.equal((await keeperPost('/endpoint/resume', {})).status, 200);
    await explained(partnerHeld, 'delivered', 60_000);

    // The endpoint fails: BREAKER_FAILURES failing answers in a row open the breaker, which holds the next one.
    answer = 503;
    const failing = [];
    for (let i = 0; i < BREAKER_FAILURES; i++) failing.push(await send('acme'));
    for (const id of failing) await explained(id, 'retry_scheduled');
    await eventually('the breaker to open', async () => (await internal('/partner')).body.state === 'tripped', 30_000);
    const behindBreaker = await send('acme');
    await explained(behindBreaker, 'breaker_open');

    // Health equals what the log holds for acme: attempts by their rows, the backlog by the pending rows.
    await eventually(
      'the health figures to equal the rows',
      async () => {
        const health = (await partnerGet(reader, '/health')).body;
        const expected = await figuresFromRows();
        assert.equal(health.last_hour.attempts, health.last_24_hours.attempts);
        const actual = {
          attempts: health.last_hour.attempts,
          delivered: health.last_hour.delivered,
          failed: health.last_hour.failed,
          pending: health.backlog.pending,
          held: health.backlog.held,
        };
        if (JSON.stringify(actual) !== JSON.stringify(expected)) return false;
        assert.equal(health.gate.state, 'tripped');
        assert.equal(health.breaker.trips, 1);
        return true;
      },
      30_000,
    );

    // A revoked app is refused within 5 s of its revocation, which the command has committed when it exits (its
    // own start-up, seconds on a loaded machine, is not the service's delay).
    const revoked = await runCli(['apps', 'revoke', reader['x-app-id']], processes.common(QUEUE), fixtures.work);
    assert.equal(revoked.code, 0, revoked.stderr);
    const revokedAt = Date.now();
    await eventually(
      'the revoked app to be refused',
      async () => (await partnerGet(reader, '/webhooks')).status === 403,
      5_000,
    );
    assert.ok(Date.now() - revokedAt < 5_000, `refused after ${Date.now() - revokedAt} ms`);
  });

  /** The acme figures the log's rows hold now: attempts (all in the last hour) and pending webhooks. */
  async function figuresFromRows() {
    const { knex } = fixtures.db;
    const [attempts] = await knex('webhook_attempts as a')
      .join('webhook_events as e', 'e.id', 'a.webhook_id')
      .where('e.company_id', 'acme')
      .select(
        knex.raw('count(*)::int AS attempts'),
        knex.raw('(count(*) FILTER (WHERE a.succeeded))::int AS delivered'),
        knex.raw('(count(*) FILTER (WHERE NOT a.succeeded))::int AS failed'),
      );
    const [backlog] = await knex('webhook_events')
      .where({ company_id: 'acme', status: 'pending' })
      .select(
        knex.raw('count(*)::int AS pending'),
        knex.raw('(count(*) FILTER (WHERE held_since IS NOT NULL))::int AS held'),
      );
    return { ...attempts, ...backlog };
  }
});
