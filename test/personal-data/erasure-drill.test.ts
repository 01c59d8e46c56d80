// The adversarial erasure, on real `partner-service api` and `worker` processes, a dev server, and the service's
// own keys (bodies sealed, the subject index keyed). One person appears in every way the service can hold them:
// a delivery waiting for its 100 s timer, a delivered, a failed and a redelivered webhook, a run reset with
// `temporal workflow reset`, a test send, only as request_author.email, only inside the message, under a non-ASCII
// address, by phone number alone, and a start held in flight by a delaying TCP proxy while the erasure runs. Erased
// by e-mail (API), phone (CLI, from stdin) and candidate id (API). After `completed`: no byte of them in any text,
// json, jsonb or bytea column of any table (sealed values opened with the keys), no run of theirs in Temporal,
// open or closed, no POST of theirs afterwards, and another person's webhooks untouched.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { webhookIds } from '../../application/ingestion/ids';
import { dataAtRest, excerptBinding, openText, storedBodyBinding } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import candidateNew from '../fixtures/events/candidate-new.json';
import { postWebhook } from '../support/api';
import { runSourceCli } from '../support/cli';
import { eventually } from '../support/eventually';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from '../support/service-processes';
import { requireTemporalBinary } from '../support/temporal';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const KEYS = {
  PAYLOAD_ENCRYPTION_KEYS: `drill:${randomBytes(32).toString('base64')}`,
  SUBJECT_INDEX_KEYS: `idx:${randomBytes(32).toString('base64')}`,
};
/** How long the proxy holds the held api's start call: past its 5 s deadline, so the start ends in doubt. */
const HOLD_MS = 8000;

describe('the adversarial erasure on api and worker processes, a dev server and the service keys', function () {
  this.timeout(300_000);
  /** Webhook ids the partner answers 500; others 200, echoing the candidate's address as partners do. */
  const failing = new Set<string>();
  const queue = `erasure-drill-${randomUUID()}`;
  /** What `before` starts: the fixtures, a proxy in front of the dev server, a client, and two api processes' URLs. */
  let fixtures: StartedServiceFixtures, proxy: TcpProxy, client: Client, api: string, heldApi: string;
  const processes = serviceProcesses(() => fixtures.setting(), { INTERNAL_API_TOKEN: INTERNAL_TOKEN, ...KEYS });

  before(async function () {
    this.timeout(90_000);
    fixtures = await startServiceFixtures('erasure-drill', (req, res, body) => {
      const email = (JSON.parse(body) as { data: { candidate?: { email?: string } } }).data.candidate?.email ?? '';
      res.writeHead(failing.has(String(req.headers['webhook-id'])) ? 500 : 200).end(`received for ${email}`);
    });
    proxy = await startTcpProxy('127.0.0.1', fixtures.serverPort);
    await processes.startWorker(queue, { WEBHOOK_START_DOUBT_SECONDS: '10', PARTNER_MAX_PER_SECOND: '1000' });
    api = await processes.startApi(queue);
    heldApi = await processes.startApi(queue, { TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}` });
    client = new Client({ connection: await Connection.connect({ address: fixtures.server.address }) });
  });

  after(async function () {
    this.timeout(60_000);
    await client?.connection.close();
    await proxy?.close();
    await stopServiceFixtures(processes, fixtures ?? {});
  });

  const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const response = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${INTERNAL_TOKEN}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const cli = (args: string[], stdin?: string) =>
    runSourceCli(
      args,
      {
        ...processes.common(queue),
        PARTNER_ENDPOINT: fixtures.partner.url,
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      } as Record<string, string>,
      stdin,
    );
  const eventOf = (candidate: Record<string, unknown>) => {
    const event = structuredClone(candidateNew) as typeof candidateNew & { event_id: string };
    event.event_id = `drill-${randomUUID()}`;
    Object.assign(
      event.data.candidate,
      { id: `other-${randomUUID()}`, email: `other-${randomUUID()}@example.org`, phone_number: '+1 555 0100' },
      candidate,
    );
    return event;
  };
  const idsOf = (event: ReturnType<typeof eventOf>) =>
    webhookIds({ event_type: 'candidate', action: 'new', event_id: event.event_id });
  const accept = async (event: object, through = api) => {
    const response = await postWebhook(through, INTERNAL_TOKEN, event);
    const body = (await response.json()) as { webhook_id: string; workflow_id: string };
    assert.equal(response.status, 202, JSON.stringify(body));
    return body;
  };
  const attempts = async (webhookId: string) =>
    (await fixtures.db.knex('webhook_attempts').where({ webhook_id: webhookId })).length;
  const statusOf = async (webhookId: string) =>
    (await fixtures.db.knex('webhook_events').where({ id: webhookId }).first('status'))?.status;
  const delivered = async (event: object) => {
    const accepted = await accept(event);
    await eventually('delivered', async () => (await statusOf(accepted.webhook_id)) === 'delivered', 30_000);
    return accepted;
  };
  /** A delivery whose partner fails it `failures` times: each retry cut short with retry-now. */
  const failedTimes = async (event: ReturnType<typeof eventOf>, failures: number) => {
    failing.add(idsOf(event).webhookId);
    const accepted = await accept(event);
    for (let attempt = 1; attempt <= failures; attempt++) {
      await eventually(
        `attempt ${attempt} recorded`,
        async () => (await attempts(accepted.webhook_id)) === attempt,
        30_000,
      );
      if (attempt < failures)
        assert.equal((await call('POST', `${api}/internal/v1/webhooks/${accepted.webhook_id}/retry-now`)).status, 202);
    }
    return accepted;
  };
  const runsOf = async (workflowId: string) => {
    let runs = 0;
    for await (const _ of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs++;
    return runs;
  };
  const completed = async (erasureId: string) => {
    let view: Record<string, any> = {};
    await eventually(
      `erasure ${erasureId} completed`,
      async () => {
        view = (await call('GET', `${api}/internal/v1/erasures/${erasureId}`)).body;
        return view.status === 'completed';
      },
      150_000,
    );
    return view;
  };
  /** Every text, json, jsonb and bytea column of every table (arrays of text too) holding one of `needles`; sealed values opened. */
  const columnsHolding = async (needles: string[]) => {
    const { knex } = fixtures.db;
    const atRest = dataAtRest(loadConfig(KEYS));
    const columns = await knex('information_schema.columns')
      .where({ table_schema: 'public' })
      .whereIn('udt_name', ['text', 'varchar', 'json', 'jsonb', 'bytea', '_text'])
      .select('table_name', 'column_name');
    const found: string[] = [];
    const holds = (text: string) => needles.filter((needle) => text.toLowerCase().includes(needle.toLowerCase()));
    for (const { table_name: table, column_name: column } of columns) {
      const values = await knex(table).whereNotNull(column).pluck(column);
      for (const value of values) {
        const text = Buffer.isBuffer(value)
          ? value.toString('latin1')
          : typeof value === 'string'
            ? value
            : JSON.stringify(value);
        for (const needle of holds(text)) found.push(`${table}.${column} holds ${needle}`);
      }
    }
    // Sealed values opened with the keys, each under its row's binding.
    const sealed = [
      ...(
        await knex('webhook_events')
          .whereNotNull('body_sealed')
          .select('id', 'redelivery_of', 'body_sealed', 'body_key_id')
      ).map((row) => ({
        where: 'webhook_events.body_sealed',
        text: openText(
          atRest,
          { clear: null, sealed: row.body_sealed, keyId: row.body_key_id },
          storedBodyBinding(row.id, row.redelivery_of, row.body_key_id),
        )!,
      })),
      ...(
        await knex('webhook_attempts')
          .whereNotNull('response_body_sealed')
          .select('webhook_id', 'attempt', 'response_body_sealed', 'response_body_key_id')
      ).map((row) => ({
        where: 'webhook_attempts.response_body_sealed',
        text: openText(
          atRest,
          { clear: null, sealed: row.response_body_sealed, keyId: row.response_body_key_id },
          excerptBinding(row.webhook_id, row.attempt),
        )!,
      })),
    ];
    for (const { where, text } of sealed)
      for (const needle of holds(text)) found.push(`${where} (opened) holds ${needle}`);
    return found;
  };

  it('finds and erases every copy of one person, and nothing of anyone else', async () => {
    const marker = randomUUID().slice(0, 8);
    const digits = `7946${String(parseInt(marker, 16) % 10_000).padStart(4, '0')}`;
    const person = {
      id: `c-${marker}`,
      email: `Jörg.${marker}@Müller.example`,
      phone: `+44 20 ${digits.slice(0, 4)} ${digits.slice(4)}`,
    };
    // Each of the person's webhooks is about a candidate record of its own (ids holding the marker), so that per-entity
    // ordering does not queue them behind the long wait; the e-mail erasure must clear those lanes' keys too.
    let records = 0;
    const full = () => eventOf({ id: `${person.id}-${++records}`, email: person.email, phone_number: person.phone });

    const waitingLong = await failedTimes(full(), 2);
    const failed = await failedTimes(full(), 4);
    await eventually(
      'the fourth failure ends it',
      async () => (await statusOf(failed.webhook_id)) === 'failed',
      30_000,
    );
    const done = await delivered(full());
    const redelivery = (await call('POST', `${api}/internal/v1/webhooks/${done.webhook_id}/redeliver`)).body as {
      webhook_id: string;
      workflow_id: string;
    };
    await eventually(
      'the redelivery delivered',
      async () => (await statusOf(redelivery.webhook_id)) === 'delivered',
      30_000,
    );
    const reset = await delivered(full());
    const resetRun = spawnSync(
      requireTemporalBinary('temporal'),
      [
        'workflow',
        'reset',
        '--address',
        fixtures.server.address,
        '-w',
        reset.workflow_id,
        '-t',
        'FirstWorkflowTask',
        '--reason',
        'drill',
        '-y',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(resetRun.status, 0, resetRun.stderr);
    await eventually('a second run of the reset workflow id', async () => (await runsOf(reset.workflow_id)) === 2);
    const testFile = path.join(fixtures.work, 'test-send.json');
    await writeFile(testFile, JSON.stringify(full()));
    const testSend = await cli(['webhooks', 'send-test', testFile]);
    assert.equal(testSend.code, 0, testSend.stderr);
    const asAuthor = await delivered(
      eventOf({ request_author: { email: person.email.toUpperCase(), first_name: 'J', last_name: 'M' } }),
    );
    const inMessage = await delivered(eventOf({ message: `Write to me at ${person.email}.` }));
    const byPhone = await delivered(eventOf({ phone_number: person.phone.replace(/ /g, '-') }));
    const other = await delivered(eventOf({}));
    assert.equal(await runsOf(waitingLong.workflow_id), 1, 'the long wait is open, on its 100 s timer');

    // Erased by e-mail: every webhook naming the address, whatever its field or case.
    const byEmail = await call('POST', `${api}/internal/v1/erasures`, { email: person.email.normalize('NFD') });
    assert.equal(byEmail.status, 202, JSON.stringify(byEmail.body));
    const emailView = await completed(byEmail.body.erasure_id);
    // Erased by phone, from the CLI with the number on stdin.
    const phoneErase = await cli(['erase', '--phone', '-', '--wait'], `${person.phone}\n`);
    assert.equal(phoneErase.code, 0, phoneErase.stderr);
    const phoneView = JSON.parse(phoneErase.stdout.trim().split('\n').pop()!);

    // A start held in flight (the proxy holds its bytes past the start's deadline) while the id's erasure runs; the
    // held api's connection is made first, so the hold meets a start and not a handshake.
    await accept(eventOf({}), heldApi);
    proxy.delay({ toServer: HOLD_MS });
    const heldEvent = eventOf({ id: person.id });
    const heldAnswer = postWebhook(heldApi, INTERNAL_TOKEN, heldEvent);
    const heldId = idsOf(heldEvent);
    await eventually('the held row written', async () => (await statusOf(heldId.webhookId)) === 'pending');
    const byId = await call('POST', `${api}/internal/v1/erasures`, { candidate_id: person.id });
    assert.equal(byId.status, 202);
    await eventually('the id erasure waits for the start', async () =>
      /starts are not settled/.test(
        (await call('GET', `${api}/internal/v1/erasures/${byId.body.erasure_id}`)).body.pending_reason ?? '',
      ),
    );
    proxy.delay({ toServer: 0 });
    const held = await heldAnswer;
    console.log(
      `      the held start answered ${held.status} ${((await held.json()) as { reason?: string }).reason ?? ''}`,
    );
    const idView = await completed(byId.body.erasure_id);
    const afterCompletion = fixtures.partner.requests.length;

    assert.deepEqual(
      [emailView, phoneView, idView].map((v) => [
        v.subject_kind,
        v.webhooks_found,
        v.runs_gone,
        v.pending_reason,
        v.index_key_ids,
      ]),
      [
        ['email', 8, 7, null, ['idx', 'development']],
        ['phone', 1, 1, null, ['idx', 'development']],
        ['candidate_id', 1, 1, null, ['idx', 'development']],
      ],
      'email: the long wait, failed, delivered, its redelivery, reset, the test send (no run), author, message; under the deployment key and the development key the test database was made with',
    );
    const workflows = [waitingLong, failed, done, redelivery, reset, asAuthor, inMessage, byPhone]
      .map((w) => w.workflow_id)
      .concat(heldId.workflowId);
    for (const workflowId of workflows)
      assert.equal(await runsOf(workflowId), 0, `Temporal lists no run of ${workflowId}`);
    assert.deepEqual(
      await columnsHolding([person.id, marker, digits]),
      [],
      'no column holds the person, sealed values opened',
    );
    // The other person: delivered, body sealed and readable, run kept.
    const [otherRow] = await fixtures.db
      .knex('webhook_events')
      .where({ id: other.webhook_id })
      .select('status', 'body_sealed', 'payload_removed_at');
    assert.deepEqual(
      [otherRow.status, otherRow.body_sealed !== null, otherRow.payload_removed_at],
      ['delivered', true, null],
    );
    assert.equal(await runsOf(other.workflow_id), 1);
    // No POST of theirs afterwards: the long wait's run would have fired on retry-now's schedule or its timer.
    await delay(3000);
    assert.deepEqual(
      fixtures.partner.requests.slice(afterCompletion).filter((r) => r.body.includes(marker)),
      [],
    );
  });
});
