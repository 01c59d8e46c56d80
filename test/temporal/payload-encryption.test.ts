// Payload encryption on a real `temporal server start-dev`: the service's API (client) and worker both use
// the AES-256-GCM codec, so the raw history the server keeps holds no candidate e-mail, phone or message,
// while the codec (in process, and the codec server through the `temporal` CLI) shows them. The fresh
// history also replays with the codec, and not without it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import type { ApiServer } from '../../api/server';
import type { Config } from '../../lib/config';
import type { DevServer } from '../../temporal/dev-server';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../../temporal/payload-codec';
import { dataConverterFor, payloadCodecFor } from '../../temporal/settings';
import type { DeliverySummary } from '../../workflows/types';
import candidateNew from '../fixtures/events/candidate-new.json';
import { historyPayloads, leftInClear, occurrencesIn } from '../support/history';
import { requireTemporalBinary, testWorkflowBundle } from '../support/temporal';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { submitWebhook } from '../support/api';
import { INTERNAL_TOKEN, CODEC_TOKEN } from '../support/tokens';

const run = promisify(execFile);
const { email, phone_number: phone, message } = candidateNew.data.candidate;

describe('payload encryption on the Temporal dev server', function () {
  this.timeout(60_000);
  let stack: WebhookStack;
  let server: DevServer;
  let config: Config;
  let api: ApiServer;
  let connection: Connection;
  /** A client without the codec: it sees what Temporal stores. */
  let rawClient: Client;
  let workflowId: string;
  let history: temporal.api.history.v1.IHistory;
  let seen = 0;

  before(async () => {
    stack = await startWebhookStack({
      env: {
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
        PAYLOAD_ENCRYPTION_KEYS: `current:${randomBytes(32).toString('base64')} previous:${randomBytes(32).toString('base64')}`,
        CODEC_AUTH_TOKEN: CODEC_TOKEN,
      },
      // The first attempt fails, so the history also holds a failed attempt, a timer and two records.
      partnerHandler: (_req, res) => res.writeHead(++seen === 1 ? 500 : 204).end(),
      compressTimers: true,
    });
    ({ server, config, api, connection, client: rawClient } = stack);

    workflowId = (
      await submitWebhook(api.url, INTERNAL_TOKEN, { ...candidateNew, event_id: `encrypted-${randomUUID()}` })
    ).workflow_id;
    // The client with the codec reads the result; the raw one would get ciphertext.
    const codecClient = new Client({ connection, dataConverter: dataConverterFor(config) });
    const summary: DeliverySummary = await codecClient.workflow.getHandle(workflowId).result();
    assert.deepEqual([summary.status, summary.attempts.length], ['delivered', 2]);
    history = await rawClient.workflow.getHandle(workflowId).fetchHistory();
  });

  after(() => stack?.close());

  it("stores no e-mail, phone number or message in clear: every payload but search attributes and core's marker data is encrypted", () => {
    for (const secret of [email, phone, message]) assert.equal(occurrencesIn(history, secret), 0, secret);
    const payloads = historyPayloads<Payload>(history);
    const encrypted = payloads.filter(
      ({ payload }) => Buffer.from(payload.metadata![METADATA_ENCODING_KEY]).toString() === ENCRYPTED_ENCODING,
    );
    // The input, the attempts' markers and results, the records' inputs: a delivery with a retry has many.
    assert.ok(encrypted.length >= 6, `${encrypted.length} encrypted payloads`);
    assert.deepEqual(
      payloads.filter((p) => !encrypted.includes(p) && !leftInClear(p.path)).map((p) => p.path),
      [],
    );
    assert.ok(
      encrypted.every(({ payload }) => Buffer.from(payload.metadata![KEY_ID_METADATA]).toString() === 'current'),
    );
  });

  it('stores none in what `temporal workflow show --output json` prints without a codec', async () => {
    const { stdout } = await run(requireTemporalBinary('temporal'), [
      'workflow',
      'show',
      '--address',
      server.address,
      '--workflow-id',
      workflowId,
      '--output',
      'json',
    ]);
    assert.match(stdout, /binary\/encrypted|YmluYXJ5L2VuY3J5cHRlZA==/);
    for (const secret of [email, phone, message]) assert.ok(!stdout.includes(secret), secret);
  });

  it('decodes with the codec: the workflow input is the event', async () => {
    const input = history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads!;
    const [decoded] = await payloadCodecFor(config)!.decode(input);
    const { event } = defaultPayloadConverter.fromPayload<{ event: typeof candidateNew }>(decoded);
    assert.equal(event.data.candidate.email, email);
    assert.equal(event.data.candidate.phone_number, phone);
  });

  it('decodes through the codec server: `temporal workflow show --codec-endpoint … --codec-auth` shows the e-mail', async () => {
    const { stdout } = await run(requireTemporalBinary('temporal'), [
      'workflow',
      'show',
      '--address',
      server.address,
      '--workflow-id',
      workflowId,
      '--output',
      'json',
      '--codec-endpoint',
      `${api.url}/codec`,
      '--codec-auth',
      `Bearer ${CODEC_TOKEN}`,
    ]);
    // Its JSON keeps payload bytes in base64, as proto3 JSON does: read them as a person would.
    const texts: string[] = [];
    JSON.parse(
      stdout,
      (key, value) => (
        key === 'data' && typeof value === 'string' && texts.push(Buffer.from(value, 'base64').toString()),
        value
      ),
    );
    for (const secret of [email, phone, message])
      assert.ok(
        texts.some((text) => text.includes(secret)),
        secret,
      );
    assert.ok(!stdout.includes('YmluYXJ5L2VuY3J5cHRlZA=='), 'no payload is left encrypted');
  });

  it('replays the encrypted history with the codec data converter, and not without it', async () => {
    const code = await testWorkflowBundle();
    await Worker.runReplayHistory(
      { workflowBundle: { code }, dataConverter: dataConverterFor(config) },
      history,
      workflowId,
    );
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle: { code } }, history, workflowId),
      /Unknown encoding: binary\/encrypted/,
    );
  });
});
