// The log drill: the service's own processes (`partner-service api` and `partner-service worker`) at
// LOG_LEVEL=trace on a real dev server, PostgreSQL and a loopback partner, driven through every path a
// candidate's data takes: ingestion (also a repeat and bad input), a partner that answers 500 echoing the body,
// a retry, deliveries, a redelivery, a cancel, the CLI's send/send-test/list/show, erasures through the CLI
// and the API, a retention purge, and a graceful shutdown. Every line that any process wrote is then read:
// none carries a candidate's id, name, e-mail address, phone number, message or a webhook body.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import { findFreePort } from '../../lib/ports';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import type { DevServer } from '../../temporal/dev-server';
import candidateNew from '../fixtures/events/candidate-new-short.json';
import { runCli, type CliResult } from '../support/cli';
import { serviceProcesses, stopServiceFixtures } from '../support/service-processes';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { startTestDevServer, tempDir } from '../support/temporal';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { linesOf } from '../support/log-lines';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

/** One candidate's personal data, distinctive enough that any copy of it in a log line is found. */
function candidate(n: number) {
  const tag = `${n}${randomUUID().slice(0, 6)}`;
  return {
    id: `candidate-${tag}`,
    first_name: `Zelphine${tag}`,
    last_name: `Quarrington${tag}`,
    email: `zelphine.quarrington.${tag}@logdrill.example.org`,
    phone_number: `+44 7700 9${tag.replace(/\D/g, '').padEnd(5, '7').slice(0, 5)}`,
    message: `Please consider my application, reference Marmalade-${tag}`,
  };
}
type Candidate = ReturnType<typeof candidate>;

function candidateEvent(person: Candidate) {
  return {
    ...candidateNew,
    event_id: `log-drill-${randomUUID()}`,
    data: {
      ...candidateNew.data,
      candidate: {
        ...candidateNew.data.candidate,
        ...person,
        request_author: {
          email: `author.${person.email}`,
          first_name: 'Ottoline',
          last_name: `Recruiter${person.first_name}`,
        },
      },
    },
  };
}

const webhookIdOf = (event: unknown) => prepareWebhook(event).webhookId;

/** The values of a person that no log line may carry. */
const personalValues = (person: Candidate) => [
  person.id,
  person.first_name,
  person.last_name,
  person.email,
  `author.${person.email}`,
  person.phone_number,
  person.message,
];

describe('log drill: no personal data in any log line of the service at LOG_LEVEL=trace', function () {
  this.timeout(180_000);
  let work: string;
  let server: DevServer;
  let serverPort: number;
  let partner: PartnerServer;
  let db: TestDatabase;
  /** Per webhook-id header: the partner's answers in order; the last repeats. A 500 answer echoes the body. */
  const script = new Map<string, number[]>();
  /** The answers to a webhook-id with no script of its own (send-test's fresh ids). */
  let unscripted = [204];
  const cliRuns: Array<{ args: string[]; result: CliResult }> = [];

  before(async function () {
    this.timeout(60_000);
    work = await tempDir('log-drill');
    serverPort = await findFreePort();
    server = await startTestDevServer({ dbFilename: path.join(work, 'temporal.db'), port: serverPort });
    db = await createTestDatabase();
    const seen = new Map<string, number>();
    partner = await startPartnerServer((req, res, body) => {
      const id = String(req.headers['webhook-id']);
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      const steps = script.get(id) ?? unscripted;
      const status = steps[Math.min(n, steps.length) - 1];
      // A partner that echoes what it got, as some error pages do: the excerpt is stored, never logged.
      if (status >= 500) res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      else res.writeHead(status).end();
    });
  });

  after(async function () {
    this.timeout(60_000);
    await stopServiceFixtures(processes, { partner, db, server, work });
  });

  const processes = serviceProcesses(
    () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url }),
    {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      LOG_LEVEL: 'trace',
    },
  );

  /** Without keys bodies rest in clear; with them, sealed, as in production. */
  const storage: Array<[string, Record<string, string>]> = [
    ['bodies in clear', {}],
    [
      'bodies sealed (PAYLOAD_ENCRYPTION_KEYS, SUBJECT_INDEX_KEY)',
      {
        PAYLOAD_ENCRYPTION_KEYS: `drill:${Buffer.alloc(32, 7).toString('base64')}`,
        SUBJECT_INDEX_KEY: Buffer.alloc(32, 9).toString('base64'),
      },
    ],
  ];
  for (const [name, keys] of storage) {
    it(`${name}: ingestion, a failing echoing partner, retry-now, delivery, redelivery, cancel, the CLI, erasures, retention and shutdown; no line carries personal data`, async () =>
      drill(keys));
  }

  async function drill(keys: Record<string, string>) {
    const queue = `log-drill-${randomUUID()}`;
    const firstProcess = processes.outputs().length;
    const since = new Date().toISOString();
    cliRuns.length = 0;
    await processes.startWorker(queue, keys);
    const api = await processes.startApi(queue, keys);
    const call = async (method: string, route: string, body?: unknown) => {
      const response = await fetch(`${api}/internal/v1${route}`, {
        method,
        headers: {
          authorization: `Bearer ${INTERNAL_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const statusOf = async (webhookId: string) => (await call('GET', `/webhooks/${webhookId}`)).body;
    const liveState = async (webhookId: string) =>
      ((await statusOf(webhookId)).live as { state?: string } | null)?.state;
    const cli = async (...args: string[]) => {
      const result = await runCli(
        [...args, '--verbose'],
        { ...processes.common(queue), PARTNER_ENDPOINT: partner.url, PARTNER_ACCESS_TOKEN: PARTNER_TOKEN, ...keys },
        work,
      );
      cliRuns.push({ args, result });
      return result;
    };
    const people = [1, 2, 3, 4, 5].map(candidate);
    const [retried, redelivered, cancelled, sentByCli, rejected] = people;

    // Ingestion, and the same event_id again.
    const retriedEvent = candidateEvent(retried);
    // The partner fails the first POST with the body echoed; retry-now cuts the 10 s wait short.
    script.set(webhookIdOf(retriedEvent), [500, 204]);
    const first = await call('POST', '/webhooks', retriedEvent);
    assert.equal(first.status, 202);
    const retriedId = String(first.body.webhook_id);
    assert.equal((await call('POST', '/webhooks', retriedEvent)).status, 200);

    // Bad input whose rejected fields are personal data: an e-mail address that is not one, a phone number
    // that is not text, and a body that is not JSON at all.
    const bad = candidateEvent(rejected);
    const badRequestAuthor = { ...bad.data.candidate.request_author, email: `${rejected.email}@@not-an-address` };
    const invalid = await call('POST', '/webhooks', {
      ...bad,
      data: {
        ...bad.data,
        candidate: { ...bad.data.candidate, phone_number: 447700900001, request_author: badRequestAuthor },
      },
    });
    assert.equal(invalid.status, 400);
    assert.deepEqual(invalid.body.errors, [
      { path: 'data.candidate.phone_number', message: 'Invalid input: expected string, received number' },
      { path: 'data.candidate.request_author.email', message: 'must be an e-mail address' },
    ]);
    assert.equal(
      (
        await call(
          'POST',
          '/webhooks',
          `{"event_type": "candidate", "email": "${rejected.email}", "phone": ${rejected.phone_number}`,
        )
      ).status,
      400,
    );

    // The first attempt answered 500 with the body echoed; the retry is delivered.
    await eventually(
      'the first attempt failed and the delivery waits',
      async () => (await liveState(retriedId)) === 'waiting',
    );
    assert.equal((await call('POST', `/webhooks/${retriedId}/retry-now`)).status, 202);
    await eventually('the retry delivered', async () => (await statusOf(retriedId)).status === 'delivered');

    // A delivery, then its redelivery.
    const redeliveredEvent = candidateEvent(redelivered);
    const delivered = await call('POST', '/webhooks', redeliveredEvent);
    const deliveredId = String(delivered.body.webhook_id);
    await eventually('delivered', async () => (await statusOf(deliveredId)).status === 'delivered');
    const redelivery = await call('POST', `/webhooks/${deliveredId}/redeliver`);
    assert.equal(redelivery.status, 202);
    const redeliveryId = String(redelivery.body.webhook_id);
    await eventually('redelivered', async () => (await statusOf(redeliveryId)).status === 'delivered');

    // A delivery that fails once and is cancelled while it waits.
    const cancelledEvent = candidateEvent(cancelled);
    const cancelledId = webhookIdOf(cancelledEvent);
    script.set(cancelledId, [503]);
    assert.equal((await call('POST', '/webhooks', cancelledEvent)).status, 202);
    await eventually('the cancelled one waits', async () => (await liveState(cancelledId)) === 'waiting');
    assert.equal((await call('POST', `/webhooks/${cancelledId}/cancel`)).status, 202);
    await eventually('cancelled', async () => (await statusOf(cancelledId)).status === 'cancelled');

    // The CLI: a send, a send of a file with bad fields and of one that is not JSON, the list and a show.
    const eventFile = path.join(work, 'candidate.json');
    await writeFile(eventFile, JSON.stringify(candidateEvent(sentByCli)));
    const sent = await cli('webhooks', 'send', eventFile);
    assert.equal(sent.code, 0, sent.stderr);
    const sentId = String(JSON.parse(sent.stdout).webhook_id);
    await eventually('the CLI send delivered', async () => (await statusOf(sentId)).status === 'delivered');
    const badFile = path.join(work, 'bad.json');
    await writeFile(
      badFile,
      JSON.stringify({
        ...bad,
        data: { ...bad.data, candidate: { ...bad.data.candidate, request_author: badRequestAuthor } },
      }),
    );
    const sentBad = await cli('webhooks', 'send', badFile);
    assert.equal(sentBad.code, 1);
    // At trace the CLI's log lines come first on stderr; its answer is the last lines.
    assert.ok(
      sentBad.stderr.endsWith(
        '\nInvalid webhook event; nothing was sent.\ndata.candidate.request_author.email: must be an e-mail address\n',
      ),
      sentBad.stderr,
    );
    const notJsonFile = path.join(work, 'not-json.json');
    await writeFile(
      notJsonFile,
      `{"candidate": {"email": "${rejected.email}", "phone_number": ${rejected.phone_number}}}`,
    );
    const sentNotJson = await cli('webhooks', 'send', notJsonFile);
    assert.equal(sentNotJson.code, 2);
    assert.ok(
      sentNotJson.stderr
        .split('\n')
        .includes(`partner-service webhooks: ${notJsonFile} is not valid JSON: Unexpected token '+'`),
      sentNotJson.stderr,
    );
    const list = await cli('webhooks', 'list', '--since', since, '--limit', '10');
    assert.equal(list.code, 0, list.stderr);
    assert.equal(JSON.parse(list.stdout).results.length, 5);
    const show = await cli('webhooks', 'show', retriedId);
    assert.equal(show.code, 0, show.stderr);
    assert.deepEqual(
      JSON.parse(show.stdout).attempts.map((a: { http_status: number }) => a.http_status),
      [500, 204],
    );

    // The storage this drill ran with: the five bodies in clear, or sealed.
    const stored = await db
      .knex('webhook_events')
      .whereIn('id', [retriedId, deliveredId, redeliveryId, cancelledId, sentId])
      .select('body', 'body_sealed');
    const sealedCount = stored.filter(
      (row: { body: unknown; body_sealed: Buffer | null }) => row.body === null && row.body_sealed !== null,
    ).length;
    assert.equal(sealedCount, keys.PAYLOAD_ENCRYPTION_KEYS ? 5 : 0);

    // send-test: one attempt outside Temporal, to a partner that answers 500 echoing the body. Its stdout
    // prints the outcome with the excerpt (the answer asked for); its stderr logs the failure without it.
    unscripted = [500];
    const sentTest = await cli('webhooks', 'send-test', eventFile);
    unscripted = [204];
    assert.equal(sentTest.code, 1, sentTest.stderr);
    assert.equal(JSON.parse(sentTest.stdout).http_status, 500);
    assert.ok(sentTest.stdout.includes(sentByCli.email), 'the excerpt echoes the body');

    // Erasure on request: by e-mail address through the CLI, which waits until Temporal has deleted every run,
    // and by candidate id through the API; a malformed address is refused by both without being echoed.
    const badAddress = `${rejected.email}@@not-an-address`;
    const refusedErasure = await call('POST', '/erasures', { email: badAddress });
    assert.equal(refusedErasure.status, 400);
    const refusedErase = await cli('erase', '--email', badAddress);
    assert.equal(refusedErase.code, 2, refusedErase.stderr);
    const strayAddress = await cli('erase', retried.email);
    assert.equal(strayAddress.code, 2, strayAddress.stderr);
    assert.ok(
      strayAddress.stderr.includes(
        'unexpected argument: give the subject as --candidate-id ID, --email ADDRESS or --phone NUMBER',
      ),
      strayAddress.stderr,
    );
    const byApi = await call('POST', '/erasures', { candidate_id: redelivered.id });
    assert.equal(byApi.status, 202);
    const [byCli] = await Promise.all([
      cli('erase', '--email', retried.email, '--wait'),
      eventually(
        'the erasure by candidate id completed',
        async () => (await call('GET', `/erasures/${byApi.body.erasure_id}`)).body.status === 'completed',
        90_000,
      ),
    ]);
    assert.equal(byCli.code, 0, byCli.stderr);
    assert.equal(JSON.parse(byCli.stdout.trim().split('\n').at(-1)!).status, 'completed');
    assert.equal((await statusOf(retriedId)).event, null);
    assert.equal((await statusOf(redeliveryId)).event, null);

    // Retention: the two webhooks left with bodies (the cancelled one, the CLI's), dated 31 days back, lose
    // them in `retention run`; nothing is due for deletion yet. `retention status` reads the policy.
    await db
      .knex('webhook_events')
      .whereIn('id', [cancelledId, sentId])
      .update({ finished_at: db.knex.raw("now() - interval '31 days'") });
    const purge = await cli('retention', 'run');
    assert.equal(purge.code, 0, purge.stderr);
    const { bodies_removed, rows_deleted } = JSON.parse(purge.stdout);
    assert.deepEqual({ bodies_removed, rows_deleted }, { bodies_removed: 2, rows_deleted: 0 });
    assert.equal((await statusOf(cancelledId)).event, null);
    const retention = await cli('retention', 'status');
    assert.equal(retention.code, 0, retention.stderr);
    assert.equal(JSON.parse(retention.stdout).payload_retention_days, 30);

    // Shutdown: every process stops gracefully and has said so.
    assert.deepEqual(await processes.terminateAll(), [0, 0]);

    // The partner did get the personal data (the drill is not vacuous), and echoed it in its 500.
    const bodies = partner.requests.map((r) => r.body).join('\n');
    for (const person of [retried, redelivered, cancelled, sentByCli])
      for (const value of personalValues(person)) assert.ok(bodies.includes(JSON.stringify(value).slice(1, -1)), value);

    // Every line any process wrote: the services' stdout and stderr, and the CLI's stderr (its log stream;
    // its stdout is the answer the operator asked for, and `show` prints the event on purpose).
    const lines = [
      ...processes
        .outputs()
        .slice(firstProcess)
        .flatMap(({ name, output }) =>
          [...linesOf(output.stdout), ...linesOf(output.stderr)].map((line) => ({ from: name, line })),
        ),
      ...cliRuns.flatMap(({ args, result }) =>
        linesOf(result.stderr).map((line) => ({ from: `cli ${args.slice(0, 2).join(' ')}`, line })),
      ),
    ];
    // Floors keep the test from passing on a capture that missed a process: at trace the worker writes about
    // 65 JSON lines (each workflow and activity started and completed, each attempt, the shutdown), the API 7.
    const jsonLinesOf = (prefix: string) =>
      lines.filter(({ from, line }) => from.startsWith(prefix) && line.startsWith('{"level":')).length;
    assert.ok(jsonLinesOf('worker') >= 50, `${jsonLinesOf('worker')} worker lines`);
    assert.ok(jsonLinesOf('api') >= 5, `${jsonLinesOf('api')} API lines`);
    for (const { args, result } of cliRuns)
      assert.ok(linesOf(result.stderr).length >= 1, `${args.join(' ')}: ${result.stderr}`);
    assert.ok(lines.length >= 100, `${lines.length} lines`);
    // A body, as sent or echoed, compact or escaped inside a JSON log line.
    const bodyMarks = [
      '"event_type":"candidate"',
      '"candidate":{',
      '\\"event_type\\":\\"candidate\\"',
      '\\"candidate\\":{',
    ];
    const forbidden = [...people.flatMap(personalValues), ...bodyMarks];
    const leaks = lines.flatMap(({ from, line }) =>
      forbidden.filter((value) => line.includes(value)).map((value) => `${from}: ${value} in ${line.slice(0, 300)}`),
    );
    assert.deepEqual(leaks, []);
    // Lower-cased or JSON-escaped copies of the e-mail addresses count too.
    const lowered = lines.map(({ line }) => line.toLowerCase());
    for (const person of people)
      assert.ok(!lowered.some((line) => line.includes(person.email.toLowerCase())), person.email);
  }
});
