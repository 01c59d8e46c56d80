// `partner-service keys reseal` as operators run it: 100,000 bodies (and 30,000 response excerpts) under key A,
// in both formats and some in clear, resealed under key B by the real CLI in a child process, SIGKILLed half-way
// and run again to the end, while a real API process keeps accepting webhooks and a second reseal is refused.
// Then key A leaves the configuration and every body and excerpt still opens.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { bodyBinding, dataAtRest, excerptBinding, openText, sealText, storedBodyBinding } from '../../lib/at-rest';
import { sealBytes } from '../../lib/aes-gcm';
import { loadConfig } from '../../lib/config';
import candidateShort from '../fixtures/events/candidate-new-short.json';
import { CLI, runCli, waitForExit } from '../support/cli';
import { eventually } from '../support/eventually';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from '../support/service-processes';
import { postWebhook } from '../support/api';
import { INTERNAL_TOKEN } from '../support/tokens';

const [KEY_A, KEY_B] = ['key-a', 'key-b'].map((id) => ({ id, key: randomBytes(32) }));
const setting = (...keys: Array<typeof KEY_A>) =>
  keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(' ');
const BODY = JSON.stringify({ ...candidateShort, event_id: 'seeded' });
const EXCERPT = `accepted ${candidateShort.data.candidate.email}`;
/** The seed: bodies in the legacy format (raw key A, no binding), in v2 under A, in clear; excerpts on some of them. */
const SEED = { legacy: 49_000, v2: 50_000, clear: 1_000, legacyExcerpts: 10_000, v2Excerpts: 20_000 };
const TOTAL_BODIES = SEED.legacy + SEED.v2 + SEED.clear;
const TOTAL_EXCERPTS = SEED.legacyExcerpts + SEED.v2Excerpts;

describe('keys reseal: 100,000 rows from key A to key B, killed half-way and resumed, beside live ingestion', function () {
  this.timeout(180_000);
  let fixtures: StartedServiceFixtures;
  const taskQueue = `reseal-${randomUUID()}`;
  const both = serviceProcesses(() => fixtures.setting(), {
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
    PAYLOAD_ENCRYPTION_KEYS: setting(KEY_B, KEY_A),
  });
  const onlyB = serviceProcesses(() => fixtures.setting(), {
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
    PAYLOAD_ENCRYPTION_KEYS: setting(KEY_B),
  });
  const underA = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: setting(KEY_A) }));
  const onlyBAtRest = dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: setting(KEY_B) }));
  const accepted: string[] = [];
  const timings: Record<string, number> = {};

  before(async function () {
    this.timeout(120_000);
    fixtures = await startServiceFixtures('reseal', (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end('accepted'),
    );
    const started = Date.now();
    await seed();
    timings.seedMs = Date.now() - started;
  });

  after(async function () {
    this.timeout(60_000);
    await onlyB.stopAll();
    await stopServiceFixtures(both, fixtures ?? {});
  });

  /** Inserts the seed with generate_series and arrays of pre-sealed values, in statements of 10,000 rows. */
  async function seed() {
    const { knex } = fixtures.db;
    const columns = `event_type, action, status, finished_at, subject_keys`;
    const values = `'candidate', 'new', 'delivered', now(), '{}'`;
    const legacyBody = sealBytes(KEY_A.key, Buffer.from(BODY));
    await knex.raw(
      `INSERT INTO webhook_events (id, event_id, body_sealed, body_key_id, ${columns}) SELECT gen_random_uuid(), 'legacy-' || g, ?, 'key-a', ${values} FROM generate_series(1, ?) g`,
      [legacyBody, SEED.legacy],
    );
    await knex.raw(
      `INSERT INTO webhook_events (id, event_id, body, ${columns}) SELECT gen_random_uuid(), 'clear-' || g, ?::json, ${values} FROM generate_series(1, ?) g`,
      [BODY, SEED.clear],
    );
    for (let done = 0; done < SEED.v2; done += 10_000) {
      const ids = Array.from({ length: 10_000 }, () => randomUUID());
      const sealed = ids.map((id) => sealText(underA, BODY, bodyBinding(id)).sealed!.toString('base64'));
      // Joined strings, not arrays: knex.raw would spread an array binding into a list.
      await knex.raw(
        `INSERT INTO webhook_events (id, event_id, body_sealed, body_key_id, ${columns})
         SELECT v.id::uuid, 'v2-' || v.id, decode(v.sealed, 'base64'), 'v2:key-a', ${values}
           FROM unnest(string_to_array(?, ','), string_to_array(?, ',')) AS v(id, sealed)`,
        [ids.join(','), sealed.join(',')],
      );
    }
    const attempts = `attempt, scheduled_at, started_at, duration_ms, http_status, succeeded`;
    await knex.raw(
      `INSERT INTO webhook_attempts (webhook_id, response_body_sealed, response_body_key_id, ${attempts})
       SELECT id, ?, 'key-a', 1, now(), now(), 5, 200, true FROM webhook_events WHERE event_id LIKE 'legacy-%' LIMIT ?`,
      [sealBytes(KEY_A.key, Buffer.from(EXCERPT)), SEED.legacyExcerpts],
    );
    const { rows } = await knex.raw(`SELECT id FROM webhook_events WHERE event_id LIKE 'v2-%' LIMIT ?`, [
      SEED.v2Excerpts,
    ]);
    const ids = (rows as Array<{ id: string }>).map(({ id }) => id);
    const sealed = ids.map((id) => sealText(underA, EXCERPT, excerptBinding(id, 1)).sealed!.toString('base64'));
    await knex.raw(
      `INSERT INTO webhook_attempts (webhook_id, response_body_sealed, response_body_key_id, ${attempts})
       SELECT v.id::uuid, decode(v.sealed, 'base64'), 'v2:key-a', 1, now(), now(), 5, 200, true
         FROM unnest(string_to_array(?, ','), string_to_array(?, ',')) AS v(id, sealed)`,
      [ids.join(','), sealed.join(',')],
    );
  }

  const keysEnv = (keys: string) => ({ ...both.common(taskQueue), PAYLOAD_ENCRYPTION_KEYS: keys });

  async function post(api: string): Promise<number> {
    const response = await postWebhook(api, INTERNAL_TOKEN, {
      ...candidateShort,
      event_id: `reseal-live-${randomUUID()}`,
    });
    if (response.status === 202) accepted.push(((await response.json()) as { webhook_id: string }).webhook_id);
    return response.status;
  }

  /** `keys status` as JSON. */
  async function status(keys: string) {
    const result = await runCli(['keys', 'status'], keysEnv(keys), fixtures.work);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as {
      to_reseal: { bodies: number; excerpts: number; lane_keys: number; signing_secrets: number };
      stored: Array<{ kind: string; key_id: string | null; format: string; count: number }>;
    };
  }

  it('dry run counts every seeded body and excerpt as still to do', async () => {
    const dry = await runCli(['keys', 'reseal', '--dry-run'], keysEnv(setting(KEY_B, KEY_A)), fixtures.work);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(JSON.parse(dry.stdout), {
      key_id: 'key-b',
      dry_run: true,
      bodies: TOTAL_BODIES,
      excerpts: TOTAL_EXCERPTS,
      lane_keys: 0,
      signing_secrets: 0,
    });
  });

  it('refuses bad flags and a configuration without keys with one line, exit 2', async () => {
    const bad = await runCli(['keys', 'reseal', '--batch-size', '0'], keysEnv(setting(KEY_B, KEY_A)), fixtures.work);
    assert.equal(bad.code, 2);
    assert.equal(
      bad.stderr.split('\n')[0],
      'partner-service keys: --batch-size must be a whole number from 1 to 10000',
    );
    const { PAYLOAD_ENCRYPTION_KEYS: _keys, ...withoutKeys } = keysEnv('');
    assert.deepEqual(await runCli(['keys', 'reseal'], withoutKeys, fixtures.work), {
      code: 2,
      stdout: '',
      stderr: 'partner-service keys: PAYLOAD_ENCRYPTION_KEYS is not set: there is no key to seal under\n',
    });
  });

  it('reseals under B: killed after some batches, refused while running twice, resumed to the end; ingestion goes on', async () => {
    const api = await both.startApi(taskQueue);
    await both.startWorker(taskQueue);
    assert.equal(await post(api), 202);

    const started = Date.now();
    const first = spawn(process.execPath, [CLI, 'keys', 'reseal'], {
      env: keysEnv(setting(KEY_B, KEY_A)),
      cwd: fixtures.work,
    });
    let progress = '';
    first.stderr.on('data', (chunk) => (progress += chunk));
    await eventually('some batches done', async () => /batch 40:/.test(progress), 60_000);
    // While it runs: a second reseal is refused, and the API accepts webhooks.
    const second = await runCli(['keys', 'reseal'], keysEnv(setting(KEY_B, KEY_A)), fixtures.work);
    assert.deepEqual(second, { code: 2, stdout: '', stderr: 'partner-service keys: another reseal is running\n' });
    for (let i = 0; i < 3; i++) assert.equal(await post(api), 202);
    first.kill('SIGKILL');
    await waitForExit(first);
    const killedAt = progress.trim().split('\n').at(-1)!;
    timings.killedAfterMs = Date.now() - started;
    const halfway = await status(setting(KEY_B, KEY_A));
    assert.ok(
      halfway.to_reseal.bodies > 0 && halfway.to_reseal.bodies < TOTAL_BODIES,
      `${JSON.stringify(halfway.to_reseal)} after ${killedAt}`,
    );

    const resumed = Date.now();
    const second2 = spawn(process.execPath, [CLI, 'keys', 'reseal'], {
      env: keysEnv(setting(KEY_B, KEY_A)),
      cwd: fixtures.work,
    });
    let out = '';
    second2.stdout.on('data', (chunk) => (out += chunk));
    assert.equal(await post(api), 202);
    assert.equal(await waitForExit(second2), 0);
    timings.resumeMs = Date.now() - resumed;
    const result = JSON.parse(out) as { key_id: string; bodies: number; excerpts: number; unreadable: number };
    assert.deepEqual([result.key_id, result.unreadable], ['key-b', 0]);
    assert.equal(result.bodies, halfway.to_reseal.bodies);
    assert.equal(result.excerpts, halfway.to_reseal.excerpts);
    console.log(
      `      seed ${timings.seedMs} ms; killed after ${timings.killedAfterMs} ms at "${killedAt}"; resumed run ${timings.resumeMs} ms resealed ${result.bodies} bodies and ${result.excerpts} excerpts`,
    );

    // Each run wrote its intent before it began: the killed one's has no outcome; the one without keys, the one
    // refused beside a running reseal and the resumed one have theirs (in the order the outcomes were known).
    const { rows: audit } = await fixtures.db.knex.raw(`
      SELECT i.target, o.outcome, o.error FROM audit_events i LEFT JOIN audit_events o ON o.operation_id = i.operation_id AND o.phase = 'outcome'
       WHERE i.action = 'keys.reseal' AND i.phase = 'intent' ORDER BY o.seq NULLS FIRST`);
    assert.deepEqual(audit, [
      { target: 'key-b', outcome: null, error: null },
      {
        target: null,
        outcome: 'failed',
        error: 'InvalidRequestError: PAYLOAD_ENCRYPTION_KEYS is not set: there is no key to seal under',
      },
      { target: 'key-b', outcome: 'failed', error: 'InvalidRequestError: another reseal is running' },
      { target: 'key-b', outcome: 'succeeded', error: null },
    ]);
    await eventually(
      'the live webhooks delivered',
      async () => {
        const { rows } = await fixtures.db.knex.raw(
          `SELECT count(*)::int AS n FROM webhook_events WHERE id = ANY(?::uuid[]) AND status = 'delivered'`,
          [`{${accepted.join(',')}}`],
        );
        return rows[0].n === accepted.length;
      },
      60_000,
    );
    await both.stopAll();
  });

  it('with key A removed: status shows everything under B in v3, and every body and excerpt opens', async () => {
    const after = await status(setting(KEY_B));
    assert.deepEqual(after.to_reseal, { bodies: 0, excerpts: 0, lane_keys: 0, signing_secrets: 0 });
    assert.deepEqual(new Set(after.stored.map((s) => `${s.key_id} ${s.format}`)), new Set(['key-b v3']));
    assert.equal(
      after.stored.filter((s) => s.kind === 'body').reduce((n, s) => n + s.count, 0),
      TOTAL_BODIES + accepted.length,
    );

    // Every row, opened in this process with key B alone, page by page.
    let undecryptable = 0;
    let opened = 0;
    for (let cursor = '00000000-0000-0000-0000-000000000000'; ;) {
      const { rows } = await fixtures.db.knex.raw(
        `SELECT e.id, e.body_sealed, e.body_key_id, e.redelivery_of, a.response_body_sealed, a.response_body_key_id
           FROM webhook_events e LEFT JOIN webhook_attempts a ON a.webhook_id = e.id AND a.attempt = 1 WHERE e.id > ? ORDER BY e.id LIMIT 10000`,
        [cursor],
      );
      if (!rows.length) break;
      for (const row of rows) {
        try {
          assert.equal(
            JSON.parse(
              openText(
                onlyBAtRest,
                { clear: null, sealed: row.body_sealed, keyId: row.body_key_id },
                storedBodyBinding(row.id, row.redelivery_of, row.body_key_id),
              )!,
            ).data.candidate.email,
            candidateShort.data.candidate.email,
          );
          if (row.response_body_sealed)
            assert.ok(
              openText(
                onlyBAtRest,
                { clear: null, sealed: row.response_body_sealed, keyId: row.response_body_key_id },
                excerptBinding(row.id, 1),
              )!.startsWith('accepted'),
            );
          opened++;
        } catch {
          undecryptable++;
        }
      }
      cursor = rows.at(-1).id;
    }
    assert.deepEqual({ opened, undecryptable }, { opened: TOTAL_BODIES + accepted.length, undecryptable: 0 });

    // A sample through the API process itself, started with key B alone.
    const api = await onlyB.startApi(taskQueue);
    const { rows: sample } = await fixtures.db.knex.raw(
      `(SELECT id FROM webhook_events WHERE event_id LIKE 'legacy-%' LIMIT 2) UNION ALL (SELECT id FROM webhook_events WHERE event_id LIKE 'v2-%' LIMIT 2) UNION ALL (SELECT id FROM webhook_events WHERE event_id LIKE 'clear-%' LIMIT 1)`,
    );
    for (const { id } of [...sample, ...accepted.map((webhookId) => ({ id: webhookId }))]) {
      const response = await fetch(`${api}/internal/v1/webhooks/${id}`, {
        headers: { authorization: `Bearer ${INTERNAL_TOKEN}` },
      });
      assert.equal(response.status, 200, id);
      assert.equal(
        ((await response.json()) as { event: { data: { candidate: { email: string } } } }).event.data.candidate.email,
        candidateShort.data.candidate.email,
        id,
      );
    }
  });
});
