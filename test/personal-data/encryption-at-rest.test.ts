// Bodies and response excerpts at rest, with the service's own processes (`partner-service api` and `worker`)
// on a real dev server and PostgreSQL, restarted with each setting of PAYLOAD_ENCRYPTION_KEYS in turn: none
// (in clear, the subject index under the development key), key A, a rotation to "B A", then "B" alone. The
// partner echoes the candidate's e-mail address, so the excerpt holds personal data too. Plain SQL reads what
// rests; the status URL and `webhooks show` read it back in clear.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { Webhook } from 'standardwebhooks';
import { findFreePort } from '../../lib/ports';
import { DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../lib/at-rest';
import { subjectKey } from '../../lib/subject-index';
import type { DevServer } from '../../temporal/dev-server';
import candidateNew from '../fixtures/events/candidate-new.json';
import companySignup from '../fixtures/events/company-signup.json';
import { runCli } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { serviceProcesses } from '../support/service-processes';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { logLines } from '../support/log-lines';
import { postWebhook, submitWebhook } from '../support/api';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const SIGNING_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const [KEY_A, KEY_B] = ['key-a', 'key-b'].map((id) => ({ id, setting: `${id}:${randomBytes(32).toString('base64')}` }));
const { candidate } = candidateNew.data;
/** What the rows must not hold in clear: the candidate's and the request author's personal data. */
const PERSONAL = [
  candidate.email,
  candidate.phone_number,
  candidate.first_name,
  candidate.last_name,
  candidate.message,
  candidate.request_author.email,
];
/** The partner's answer: it echoes the candidate's e-mail address and name from the body it got. */
const echo = (body: string) => {
  const sent = JSON.parse(body) as { data: { candidate?: { email: string; last_name: string } } };
  return sent.data.candidate ? `accepted ${sent.data.candidate.email} (${sent.data.candidate.last_name})` : 'accepted';
};

/** The worker's start lines about how data rests, as `level message`. */
const DEVELOPMENT_KEY_LINE =
  '40 SUBJECT_INDEX_KEYS is not set: the erasure index is keyed with the public development key';
const encryptedWith = (keyId: string) =>
  `30 webhook bodies and response excerpts are stored encrypted (AES-256-GCM) with key ${keyId}`;
/** The clear rows of the first phase, counted at each keyed start until a reseal seals them. */
const CLEAR_LINE =
  '40 2 bodies and 2 response excerpts are stored in clear although PAYLOAD_ENCRYPTION_KEYS is set: partner-service keys reseal seals them';
/** The ordering lanes of the first phase's two entities (a company, a candidate), whose keys rest in clear likewise. */
const CLEAR_LANES_LINE =
  '40 2 ordering lane keys are stored in clear although PAYLOAD_ENCRYPTION_KEYS is set: partner-service keys reseal seals them';

describe("bodies and response excerpts at rest: the service's API and worker processes through a key rotation", function () {
  this.timeout(120_000);
  let work: string;
  let server: DevServer;
  let serverPort: number;
  let partner: PartnerServer;
  let db: TestDatabase;
  const taskQueue = `at-rest-${randomUUID()}`;
  const setting = () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url });
  /** The processes of each setting, in the order the tests start them. */
  const settings = {
    none: serviceProcesses(setting, { INTERNAL_API_TOKEN: INTERNAL_TOKEN }),
    a: serviceProcesses(setting, {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      PAYLOAD_ENCRYPTION_KEYS: KEY_A.setting,
      PARTNER_SIGNING_SECRETS: SIGNING_SECRET,
    }),
    ba: serviceProcesses(setting, {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      PAYLOAD_ENCRYPTION_KEYS: `${KEY_B.setting} ${KEY_A.setting}`,
    }),
    b: serviceProcesses(setting, { INTERNAL_API_TOKEN: INTERNAL_TOKEN, PAYLOAD_ENCRYPTION_KEYS: KEY_B.setting }),
  };
  /** Webhook ids of each phase, read by later phases. */
  const ids = { clear: '', company: '', sealedA: '', redeliveryA: '', sealedB: '' };
  let apiA = '';

  before(async function () {
    this.timeout(60_000);
    work = await tempDir('at-rest');
    serverPort = await findFreePort();
    server = await startTestDevServer({ port: serverPort });
    db = await createTestDatabase();
    partner = await startPartnerServer((_req, res, body) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end(echo(body)),
    );
  });

  after(async function () {
    this.timeout(60_000);
    for (const processes of Object.values(settings)) await processes.stopAll();
    await partner?.close();
    await db?.drop();
    await server?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** Starts a worker and an API with one setting; the worker's log so far and the API's base URL. */
  async function startWith(processes: (typeof settings)[keyof typeof settings]) {
    const worker = await processes.startWorker(taskQueue);
    const api = await processes.startApi(taskQueue);
    return { worker, api };
  }

  async function send(api: string, event: object): Promise<string> {
    return (await submitWebhook(api, INTERNAL_TOKEN, event)).webhook_id;
  }
  const sendCandidate = (api: string) => send(api, { ...candidateNew, event_id: `at-rest-${randomUUID()}` });

  const delivered = (webhookId: string) =>
    eventually(
      `${webhookId} delivered`,
      async () => (await db.knex('webhook_events').where({ id: webhookId }).first())?.status === 'delivered',
      60_000,
    );

  async function view(api: string, webhookId: string) {
    const response = await fetch(`${api}/internal/v1/webhooks/${webhookId}`, {
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  }

  /** The raw columns of a webhook and its attempts, as plain SQL reads them. */
  async function resting(webhookId: string) {
    const {
      rows: [row],
    } = await db.knex.raw(
      'SELECT body::text AS body, body_sealed, body_key_id, pg_typeof(body_sealed)::text AS sealed_type, subject_keys FROM webhook_events WHERE id = ?',
      [webhookId],
    );
    const { rows: attempts } = await db.knex.raw(
      'SELECT response_body, response_body_sealed, response_body_key_id, pg_typeof(response_body_sealed)::text AS sealed_type FROM webhook_attempts WHERE webhook_id = ? ORDER BY attempt',
      [webhookId],
    );
    return { row, attempts };
  }

  const requestsOf = (webhookId: string) =>
    partner.requests.filter((request) => request.headers['webhook-id'] === webhookId);

  /** The start lines of a worker about how data rests, by message. */
  const atRestLines = (stdout: string) =>
    logLines(stdout)
      .filter((line) =>
        /PAYLOAD_ENCRYPTION_KEYS|SUBJECT_INDEX_KEY|stored encrypted|sealed under key ids/.test(line.msg),
      )
      .map((line) => `${line.level} ${line.msg}`);

  it('without keys: the worker says bodies rest in clear; a row holds its body in clear and the subject index under the development key', async () => {
    const { worker, api } = await startWith(settings.none);
    assert.deepEqual(atRestLines(worker.output.stdout), [
      '40 PAYLOAD_ENCRYPTION_KEYS is not set: webhook bodies and response excerpts are stored in clear in PostgreSQL',
      DEVELOPMENT_KEY_LINE,
    ]);
    ids.clear = await sendCandidate(api);
    ids.company = await send(api, { ...companySignup, event_id: `at-rest-company-${randomUUID()}` });
    await delivered(ids.clear);
    await delivered(ids.company);

    const { row, attempts } = await resting(ids.clear);
    assert.equal(row.body, requestsOf(ids.clear)[0].body, 'the body in clear is the bytes the partner got');
    assert.deepEqual([row.body_sealed, row.body_key_id], [null, null]);
    assert.deepEqual(row.subject_keys, [
      subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', candidate.id),
      subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'phone', candidate.phone_number),
      subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email', candidate.email),
      subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email', candidate.request_author.email),
    ]);
    assert.deepEqual(
      attempts.map((a: Record<string, unknown>) => [a.response_body, a.response_body_sealed, a.response_body_key_id]),
      [[`accepted ${candidate.email} (${candidate.last_name})`, null, null]],
    );
    assert.deepEqual((await resting(ids.company)).row.subject_keys, []);
    await settings.none.stopAll();
  });

  it('with key A: the body and the excerpt are ciphertext under key A in the tables, and in clear at the status URL and in `webhooks show`', async () => {
    const { worker, api } = await startWith(settings.a);
    apiA = api;
    assert.deepEqual(atRestLines(worker.output.stdout), [
      encryptedWith('key-a'),
      DEVELOPMENT_KEY_LINE,
      CLEAR_LINE,
      CLEAR_LANES_LINE,
    ]);
    ids.sealedA = await sendCandidate(api);
    await delivered(ids.sealedA);

    const { row, attempts } = await resting(ids.sealedA);
    assert.deepEqual([row.body, row.body_key_id, row.sealed_type], [null, `v3:${KEY_A.id}`, 'bytea']);
    assert.ok(Buffer.isBuffer(row.body_sealed));
    // IV and tag around a ciphertext as long as the body's bytes.
    const [sent] = requestsOf(ids.sealedA);
    assert.equal(row.body_sealed.length, 12 + Buffer.byteLength(sent.body) + 16);
    assert.equal(attempts.length, 1);
    const [attempt] = attempts;
    assert.deepEqual(
      [attempt.response_body, attempt.response_body_key_id, attempt.sealed_type],
      [null, `v3:${KEY_A.id}`, 'bytea'],
    );
    for (const value of PERSONAL) {
      for (const sealed of [row.body_sealed as Buffer, attempt.response_body_sealed as Buffer]) {
        assert.equal(sealed.indexOf(value), -1, `${value} in clear`);
        assert.equal(sealed.indexOf(Buffer.from(value).toString('base64')), -1, `${value} in base64`);
      }
    }
    // Nothing of the person anywhere in the row's text as PostgreSQL prints it.
    const {
      rows: [printed],
    } = await db.knex.raw(
      "SELECT e::text AS row, (SELECT string_agg(a::text, ',') FROM webhook_attempts a WHERE a.webhook_id = e.id) AS attempts FROM webhook_events e WHERE id = ?",
      [ids.sealedA],
    );
    for (const value of PERSONAL) assert.ok(!printed.row.includes(value) && !printed.attempts.includes(value), value);

    const shown = await view(api, ids.sealedA);
    assert.equal(shown.status, 200);
    assert.deepEqual(shown.body.event, JSON.parse(sent.body));
    assert.deepEqual(
      shown.body.attempts.map((a: Record<string, unknown>) => a.response_body),
      [`accepted ${candidate.email} (${candidate.last_name})`],
    );
    assert.equal(JSON.stringify(shown.body.attempts[0]).includes('sealed'), false, 'the view shows no sealed column');

    const cli = await runCli(['webhooks', 'show', ids.sealedA], settings.a.common(taskQueue), work);
    assert.equal(cli.code, 0, cli.stderr);
    const printedView = JSON.parse(cli.stdout) as Record<string, any>;
    assert.deepEqual(printedView.event, JSON.parse(sent.body));
    assert.deepEqual(
      printedView.attempts.map((a: Record<string, unknown>) => a.response_body),
      [`accepted ${candidate.email} (${candidate.last_name})`],
    );
  });

  it('with key A: a redelivery POSTs the same bytes as the first delivery, under the same webhook-id, and both signatures verify with standardwebhooks', async () => {
    const api = apiA;
    const response = await fetch(`${api}/internal/v1/webhooks/${ids.sealedA}/redeliver`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
    });
    assert.equal(response.status, 202);
    ids.redeliveryA = ((await response.json()) as { webhook_id: string }).webhook_id;
    await delivered(ids.redeliveryA);

    const [first, second] = requestsOf(ids.sealedA);
    assert.equal(requestsOf(ids.sealedA).length, 2, 'the redelivery carries the original webhook-id');
    assert.equal(second.body, first.body);
    for (const request of [first, second])
      assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+={0,2}$/);
    const receiver = new Webhook(SIGNING_SECRET);
    for (const request of [first, second]) {
      assert.deepEqual(
        receiver.verify(request.body, request.headers as Record<string, string>),
        JSON.parse(first.body),
      );
    }
    const { row } = await resting(ids.redeliveryA);
    assert.deepEqual([row.body, row.body_key_id], [null, `v3:${KEY_A.id}`]);
    assert.equal((await view(api, ids.redeliveryA)).body.event.data.candidate.email, candidate.email);
    await settings.a.stopAll();
  });

  it('after a rotation to "B A": new rows are sealed under B, rows under A and in clear still read', async () => {
    const { worker, api } = await startWith(settings.ba);
    assert.deepEqual(atRestLines(worker.output.stdout), [
      encryptedWith('key-b'),
      DEVELOPMENT_KEY_LINE,
      CLEAR_LINE,
      CLEAR_LANES_LINE,
    ]);
    ids.sealedB = await sendCandidate(api);
    await delivered(ids.sealedB);
    const { row, attempts } = await resting(ids.sealedB);
    assert.deepEqual(
      [row.body, row.body_key_id, attempts.map((a: Record<string, unknown>) => a.response_body_key_id)],
      [null, `v3:${KEY_B.id}`, [`v3:${KEY_B.id}`]],
    );
    assert.deepEqual(
      row.subject_keys,
      (await resting(ids.clear)).row.subject_keys,
      'the subject index does not follow the payload keys',
    );

    for (const webhookId of [ids.sealedB, ids.sealedA, ids.clear]) {
      const shown = await view(api, webhookId);
      assert.equal(shown.status, 200, webhookId);
      assert.equal(shown.body.event.data.candidate.email, candidate.email, webhookId);
      assert.deepEqual(
        shown.body.attempts.map((a: Record<string, unknown>) => a.response_body),
        [`accepted ${candidate.email} (${candidate.last_name})`],
        webhookId,
      );
    }
    await settings.ba.stopAll();
  });

  it('with "B" alone: the worker\'s start says in one line how many bodies and excerpts rest under the unlisted key A', async () => {
    const worker = await settings.b.startWorker(taskQueue);
    const lines = atRestLines(worker.output.stdout);
    assert.deepEqual(lines, [
      encryptedWith('key-b'),
      DEVELOPMENT_KEY_LINE,
      '40 2 bodies and 2 response excerpts are sealed under key ids PAYLOAD_ENCRYPTION_KEYS no longer lists (key-a): they cannot be read until that key is listed again',
      CLEAR_LINE,
      CLEAR_LANES_LINE,
    ]);
    const counted = logLines(worker.output.stdout).find((line) => line.msg.includes('no longer lists'))!;
    assert.deepEqual([counted.bodies, counted.excerpts, counted.keyIds], [2, 2, [KEY_A.id]]);
  });

  it('with "B" alone: a row under A is refused by name at the status URL (500) and by `webhooks show` and `redeliver` (exit 1); a row under B still reads', async () => {
    const api = await settings.b.startApi(taskQueue);
    const unlisted =
      'a webhook body or response excerpt is sealed with key id "key-a", which PAYLOAD_ENCRYPTION_KEYS no longer lists: list that key again to read it';
    assert.deepEqual(await view(api, ids.sealedA), {
      status: 500,
      body: {
        detail:
          "The webhook's data cannot be read with the keys this service was started with; an operator must list its key again.",
        reason: unlisted,
      },
    });
    for (const command of ['show', 'redeliver']) {
      assert.deepEqual(await runCli(['webhooks', command, ids.sealedA], settings.b.common(taskQueue), work), {
        code: 1,
        stdout: '',
        stderr: `partner-service: ${unlisted}\n`,
      });
    }
    assert.equal(
      (await db.knex('webhook_events').where({ redelivery_of: ids.sealedA })).length,
      1,
      'the refused redelivery started nothing',
    );
    assert.equal((await view(api, ids.sealedB)).body.event.data.candidate.email, candidate.email);
    await settings.b.stopAll();
  });

  it('with "B": a body or an excerpt copied onto another webhook\'s row does not open there, and the status URL says so (500)', async () => {
    const api = await settings.b.startApi(taskQueue);
    // The ciphertexts of sealedB, copied onto the row (and attempt 1) of the webhook that was stored in clear.
    await db.knex.raw(
      `UPDATE webhook_events SET body = NULL, (body_sealed, body_key_id) = (SELECT body_sealed, body_key_id FROM webhook_events WHERE id = ?) WHERE id = ?`,
      [ids.sealedB, ids.clear],
    );
    const moved =
      'a webhook body or response excerpt sealed with key "key-b" does not open: it belongs to another row, or it was altered (or the key under this id changed)';
    const detail =
      "The webhook's data cannot be read with the keys this service was started with; an operator must list its key again.";
    assert.deepEqual(await view(api, ids.clear), { status: 500, body: { detail, reason: moved } });
    // An excerpt likewise: sealedB's first one, onto the first attempt of the company webhook (whose body is in clear).
    await db.knex.raw(
      `UPDATE webhook_attempts SET response_body = NULL, (response_body_sealed, response_body_key_id) = (SELECT response_body_sealed, response_body_key_id FROM webhook_attempts WHERE webhook_id = ? AND attempt = 1)
        WHERE webhook_id = ? AND attempt = 1`,
      [ids.sealedB, ids.company],
    );
    assert.deepEqual(await view(api, ids.company), { status: 500, body: { detail, reason: moved } });
    assert.equal(
      (await view(api, ids.sealedB)).body.event.data.candidate.email,
      candidate.email,
      'the original still opens in its own row',
    );
    await settings.b.stopAll();
  });

  it('without keys once keys were used: the API answers 503 encryption_required, `webhooks send` and `send-test` exit 2, the worker does not start; nothing is written', async () => {
    const {
      rows: [{ since }],
    } = await db.knex.raw('SELECT encrypted_since AS since FROM data_at_rest_settings');
    const before = await db.knex.raw(
      'SELECT (SELECT count(*) FROM webhook_events)::int AS rows, (SELECT count(*) FROM webhook_attempts)::int AS attempts',
    );
    const api = await settings.none.startApi(taskQueue);
    const response = await postWebhook(api, INTERNAL_TOKEN, { ...candidateNew, event_id: `at-rest-${randomUUID()}` });
    assert.deepEqual(
      [response.status, await response.json()],
      [
        503,
        {
          detail: `This deployment stores webhook bodies encrypted (since ${(since as Date).toISOString()}), and this process was started without PAYLOAD_ENCRYPTION_KEYS: nothing was stored. An operator must set the keys.`,
          reason: 'encryption_required',
        },
      ],
    );
    const refused = `this deployment stores webhook bodies and response excerpts encrypted (since ${(since as Date).toISOString()}), and PAYLOAD_ENCRYPTION_KEYS is not set in this process: nothing was written`;
    const eventFile = require.resolve('../fixtures/events/candidate-new.json');
    const env = {
      ...settings.none.common(taskQueue),
      PARTNER_ENDPOINT: partner.url,
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
    };
    for (const command of ['send', 'send-test']) {
      assert.deepEqual(
        await runCli(['webhooks', command, eventFile], env, work),
        { code: 2, stdout: '', stderr: `partner-service webhooks: ${refused}\n` },
        command,
      );
    }
    const worker = await runCli(['worker'], { ...env, WORKER_HTTP_PORT: String(await findFreePort()) }, work);
    assert.equal(worker.code, 2, worker.stderr);
    assert.equal(worker.stderr, `partner-service worker: ${refused}\n`);
    const after = await db.knex.raw(
      'SELECT (SELECT count(*) FROM webhook_events)::int AS rows, (SELECT count(*) FROM webhook_attempts)::int AS attempts',
    );
    assert.deepEqual(after.rows, before.rows, 'nothing was written');
    await settings.none.stopAll();
  });
});
