// A bulk redelivery's dry run (`dry_run: true`, `webhooks redeliver --all --dry-run`) on a real dev server: its
// count is what the same request then starts, over a mix of every rule the redelivery applies, and it starts
// nothing. A loopback partner answers 204.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { previewRedelivery } from '../../application/webhooks/redelivery-preview';
import { redeliverMatching } from '../../application/webhooks/webhook-operations';
import { bodyBinding, dataAtRest, sealText } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import candidateNew from '../fixtures/events/candidate-new.json';
import { OPERATOR } from '../support/operator';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { INTERNAL_TOKEN } from '../support/tokens';
import { internalCall } from '../support/api';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');

describe("a bulk redelivery's dry run (a real dev server)", function () {
  this.timeout(180_000);
  let stack: WebhookStack;

  before(async () => {
    stack = await startWebhookStack({
      env: { INTERNAL_API_TOKEN: INTERNAL_TOKEN, PARTNER_MAX_PER_SECOND: '1000', PARTNER_MAX_CONCURRENCY: '50' },
    });
  });

  after(() => stack?.close());

  const call = (path: string, body?: unknown) =>
    internalCall(`${stack.api.url}/internal/v1/webhooks${path}`, INTERNAL_TOKEN, 'POST', body);
  type Links = { files?: boolean; fileAnswers?: boolean };
  /** A candidate event of `company`, with or without a signed file link and a file answer. */
  const candidate = (company: string, { files = true, fileAnswers = true }: Links = {}) => {
    const event = structuredClone(candidateNew) as any;
    event.event_id = `preview-${randomUUID()}`;
    event.data.company.id = company;
    event.data.candidate.id = `c-${randomUUID()}`;
    if (!files) event.data.candidate.files.cv = null;
    if (!fileAnswers)
      event.data.candidate.answers = event.data.candidate.answers.filter(
        (a: { answer_type: string }) => a.answer_type !== 'file',
      );
    return event;
  };
  /** A delivered webhook of `company`. */
  const delivered = async (company: string, links?: Links): Promise<string> => {
    const accepted = await call('', candidate(company, links));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await stack.client.workflow.getHandle(accepted.body.workflow_id).result();
    return accepted.body.webhook_id as string;
  };
  const rows = (where: Record<string, unknown> = {}) =>
    stack.db
      .knex('webhook_events')
      .where(where)
      .count({ n: '*' })
      .then(([{ n }]) => Number(n));
  /** Puts rows in the order given, newest first, a second apart. */
  const inOrder = async (ids: string[]) => {
    for (const [i, id] of ids.entries())
      await stack.db
        .knex('webhook_events')
        .where({ id })
        .update({ created_at: new Date(Date.UTC(2026, 1, 1) - i * 1000) });
  };
  const acceptedHoursAgo = (id: string, hours: number) =>
    stack.db
      .knex('webhook_events')
      .where({ id })
      .update({ accepted_at: stack.db.knex.raw(`now() - ?::interval`, [`${hours} hours`]) });
  const removePayload = (id: string) =>
    stack.db
      .knex('webhook_events')
      .where({ id })
      .update({
        body: null,
        body_sealed: null,
        body_key_id: null,
        payload_removed_at: stack.db.knex.raw('now()'),
        payload_removed_reason: 'retention',
      });
  const redeliveriesDone = async (company: string) => {
    const pending = await stack.db
      .knex('webhook_events')
      .where({ company_id: company })
      .whereNotNull('redelivery_of')
      .whereNot({ status: 'delivered' })
      .select('workflow_id');
    await Promise.all(pending.map((row) => stack.client.workflow.getHandle(row.workflow_id).result()));
  };

  /** This worker holds no key: the redeliveries of a keyed test cannot send, so they are stopped (one may have ended already). */
  const stopKeyedRedeliveries = async (company: string) => {
    const started = await stack.db
      .knex('webhook_events')
      .where({ company_id: company })
      .whereNotNull('redelivery_of')
      .pluck('workflow_id');
    await Promise.all(
      started.map((workflowId: string) =>
        stack.client.workflow
          .getHandle(workflowId)
          .terminate('test: no key in this worker')
          .catch((error: unknown) => {
            if (!(error instanceof WorkflowNotFoundError)) throw error;
          }),
      ),
    );
  };

  it('counts what the same request then starts, over every rule, and starts nothing itself', async () => {
    const company = `preview-${randomUUID().slice(0, 8)}`;
    const filter = { company_id: company, status: 'delivered' };
    // Already redelivered under this filter's key: neither it nor its finished redelivery is a candidate.
    const keyed = await delivered(company);
    assert.deepEqual(await call('/redeliver', filter), {
      status: 200,
      body: { started: 1, skipped_expired_links: 0, skipped_payload_removed: 0, more: false },
    });
    await redeliveriesDone(company);
    const [twice, fresh, stale, removed, late, last, filesOnly, answersOnly] = [
      await delivered(company),
      await delivered(company),
      await delivered(company),
      await delivered(company),
      await delivered(company),
      await delivered(company),
      await delivered(company, { fileAnswers: false }),
      await delivered(company, { files: false }),
    ];
    // An original and its own redelivery (another key) both match: one original.
    const single = await call(`/${twice}/redeliver`);
    assert.equal(single.status, 202);
    await stack.client.workflow.getHandle(single.body.workflow_id).result();
    await acceptedHoursAgo(stale, 25);
    // 3 h: a file answer's link is dead (2 h), a file's is not (24 h).
    await acceptedHoursAgo(filesOnly, 3);
    await acceptedHoursAgo(answersOnly, 3);
    await removePayload(removed);
    await inOrder([single.body.webhook_id, fresh, stale, removed, answersOnly, twice, late, filesOnly, last]);
    assert.ok(keyed);

    // Newest first: twice (its redelivery) starts, fresh starts, stale and answersOnly are skipped for their
    // links, removed for its body, twice's own row is taken, late is the 3rd start; filesOnly and last are left.
    const before = await rows();
    const preview = await call('/redeliver', { ...filter, limit: 3, dry_run: true });
    assert.deepEqual(preview, {
      status: 200,
      body: { dry_run: true, would_start: 3, skipped_expired_links: 2, skipped_payload_removed: 1, more: true },
    });
    assert.equal(await rows(), before, 'the preview wrote no webhook row');
    assert.deepEqual(await call('/redeliver', { ...filter, limit: 3 }), {
      status: 200,
      body: { started: 3, skipped_expired_links: 2, skipped_payload_removed: 1, more: true },
    });
    assert.equal(await rows(), before + 3);
    assert.deepEqual(
      (
        await stack.db
          .knex('webhook_events')
          .where({ company_id: company })
          .whereNotNull('redelivery_of')
          .whereLike('redelivery_key', 'bulk:%')
          .pluck('redelivery_of')
      ).sort(),
      [keyed, twice, fresh, late].sort(),
    );
    await redeliveriesDone(company);

    // Left: stale, answersOnly (dead links), removed, filesOnly and last.
    const next = { ...filter, limit: 1 };
    assert.deepEqual(await call('/redeliver', { ...next, dry_run: true }), {
      status: 200,
      body: { dry_run: true, would_start: 1, skipped_expired_links: 2, skipped_payload_removed: 1, more: true },
    });
    assert.deepEqual(await call('/redeliver', next), {
      status: 200,
      body: { started: 1, skipped_expired_links: 2, skipped_payload_removed: 1, more: true },
    });
    const allowed = { ...filter, allow_expired_links: true };
    assert.deepEqual(await call('/redeliver', { ...allowed, dry_run: true }), {
      status: 200,
      body: { dry_run: true, would_start: 3, skipped_expired_links: 0, skipped_payload_removed: 1, more: false },
    });
    const withoutLinks = { ...filter, dry_run: true };
    assert.deepEqual(await call('/redeliver', withoutLinks), {
      status: 200,
      body: { dry_run: true, would_start: 1, skipped_expired_links: 2, skipped_payload_removed: 1, more: false },
    });
    assert.deepEqual(await call('/redeliver', allowed), {
      status: 200,
      body: { started: 3, skipped_expired_links: 0, skipped_payload_removed: 1, more: false },
    });
    assert.deepEqual(await call('/redeliver', withoutLinks), {
      status: 200,
      body: { dry_run: true, would_start: 0, skipped_expired_links: 0, skipped_payload_removed: 1, more: false },
    });
    assert.equal(await rows({ redelivery_of: removed }), 0);
    assert.equal(await rows(), before + 7);
  });

  it('answers 400 for a bad filter exactly as the redelivery does, and for a dry_run that is not a boolean', async () => {
    const invalid = (errors: { path: string; message: string }[]) => ({
      status: 400,
      body: { detail: 'Invalid filter or paging.', errors },
    });
    assert.deepEqual(
      await call('/redeliver', { status: 'waiting', dry_run: true }),
      invalid([
        {
          path: 'status',
          message: 'must be one of delivered, failed, cancelled, terminated: only finished deliveries are redelivered',
        },
      ]),
    );
    assert.deepEqual(
      await call('/redeliver', { since: 'yesterday', colour: 'red', dry_run: true }),
      invalid([
        { path: 'since', message: 'must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z' },
        { path: 'colour', message: 'unknown field' },
      ]),
    );
    for (const dryRun of ['true', 1, null, {}]) {
      assert.deepEqual(
        await call('/redeliver', { company_id: 'acme', dry_run: dryRun }),
        invalid([{ path: 'dry_run', message: 'must be true or false' }]),
        JSON.stringify(dryRun),
      );
    }
  });

  it('opens sealed bodies to tell their dead links, as the redelivery does', async () => {
    const keyed = dataAtRest(
      loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `preview:${Buffer.alloc(32, 5).toString('base64')}` }),
    );
    const company = `preview-sealed-${randomUUID().slice(0, 8)}`;
    const [recent, answersOnly, filesOnly] = [
      await delivered(company),
      await delivered(company, { files: false }),
      await delivered(company, { fileAnswers: false }),
    ];
    for (const id of [recent, answersOnly, filesOnly]) {
      const { body } = await stack.db.knex('webhook_events').where({ id }).first('body');
      const sealed = sealText(keyed, JSON.stringify(body), bodyBinding(id));
      await stack.db
        .knex('webhook_events')
        .where({ id })
        .update({ body: null, body_sealed: sealed.sealed, body_key_id: sealed.keyId });
    }
    await acceptedHoursAgo(answersOnly, 3);
    await acceptedHoursAgo(filesOnly, 3);
    const filter = { companyId: company, status: 'delivered' as const };
    const before = await rows();
    assert.deepEqual(await previewRedelivery(stack.db.knex, OPERATOR, filter, { atRest: keyed, limit: 10 }), {
      dry_run: true,
      would_start: 2,
      skipped_expired_links: 1,
      skipped_payload_removed: 0,
      more: false,
    });
    assert.equal(await rows(), before);
    const options = { sendTimeoutMs: stack.config.PARTNER_TIMEOUT_MS, atRest: keyed, limit: 10 };
    assert.deepEqual(await redeliverMatching(stack.db.knex, stack.gateway, OPERATOR, filter, options), {
      started: 2,
      skipped_expired_links: 1,
      skipped_payload_removed: 0,
      more: false,
    });
    await stopKeyedRedeliveries(company);
  });

  it('opens no sealed body past the stop at `limit`, as the redelivery opens none: one no key opens is not reached', async () => {
    const keyed = dataAtRest(
      loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `preview:${Buffer.alloc(32, 5).toString('base64')}` }),
    );
    const unlisted = dataAtRest(
      loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `gone:${Buffer.alloc(32, 6).toString('base64')}` }),
    );
    const company = `preview-bound-${randomUUID().slice(0, 8)}`;
    const [newest, next, oldest] = [
      await delivered(company, { fileAnswers: false }),
      await delivered(company),
      await delivered(company),
    ];
    // All three old enough for a dead link, so each must be opened to be counted; the oldest under a key no one lists.
    for (const [id, atRest] of [
      [newest, keyed],
      [next, keyed],
      [oldest, unlisted],
    ] as const) {
      const { body } = await stack.db.knex('webhook_events').where({ id }).first('body');
      const sealed = sealText(atRest, JSON.stringify(body), bodyBinding(id));
      await stack.db
        .knex('webhook_events')
        .where({ id })
        .update({ body: null, body_sealed: sealed.sealed, body_key_id: sealed.keyId });
      await acceptedHoursAgo(id, 3);
    }
    await inOrder([newest, next, oldest]);
    const filter = { companyId: company, status: 'delivered' as const };
    // At 3 h newest's file link is alive (24 h): the one start; oldest lies past the stop, never opened. With 2, next's
    // file answer is dead (2 h), so the walk goes on to oldest, which neither the preview nor the redelivery can open.
    assert.deepEqual(await previewRedelivery(stack.db.knex, OPERATOR, filter, { atRest: keyed, limit: 1 }), {
      dry_run: true,
      would_start: 1,
      skipped_expired_links: 0,
      skipped_payload_removed: 0,
      more: true,
    });
    assert.deepEqual(
      await previewRedelivery(stack.db.knex, OPERATOR, filter, { atRest: keyed, limit: 2 }).catch(
        (error: Error) => error.name,
      ),
      'StoredTextDecryptionError',
    );
    const options = { sendTimeoutMs: stack.config.PARTNER_TIMEOUT_MS, atRest: keyed, limit: 1 };
    assert.deepEqual(await redeliverMatching(stack.db.knex, stack.gateway, OPERATOR, filter, options), {
      started: 1,
      skipped_expired_links: 0,
      skipped_payload_removed: 0,
      more: true,
    });
    await stopKeyedRedeliveries(company);
  });

  describe('the CLI: webhooks redeliver --all --dry-run', () => {
    const cli = async (...args: string[]) => {
      try {
        const { stdout, stderr } = await run(
          process.execPath,
          ['--require', 'tsx/cjs', 'cli/main.ts', 'webhooks', ...args],
          {
            cwd: ROOT,
            env: {
              PATH: process.env.PATH ?? '',
              DATABASE_URL: stack.db.url,
              TEMPORAL_ADDRESS: stack.server.address,
              TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
              LOG_LEVEL: 'warn',
            },
          },
        );
        return { code: 0, stdout, stderr };
      } catch (error) {
        const e = error as { code: number; stdout: string; stderr: string };
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      }
    };

    it('prints what --all would do and starts nothing; exit 2 for a bad filter or without --all', async () => {
      const company = `preview-cli-${randomUUID().slice(0, 8)}`;
      const done = await delivered(company);
      const stale = await delivered(company);
      await acceptedHoursAgo(stale, 25);
      const flags = ['--company-id', company, '--status', 'delivered'];
      const preview = await cli('redeliver', '--all', ...flags, '--dry-run');
      assert.deepEqual(preview, {
        code: 0,
        stdout: '{"dry_run":true,"would_start":1,"skipped_expired_links":1,"skipped_payload_removed":0,"more":false}\n',
        stderr: '',
      });
      assert.equal(await rows({ redelivery_of: done }), 0);
      const allowed = await cli('redeliver', '--all', ...flags, '--allow-expired-links', '--dry-run', '--limit', '1');
      assert.deepEqual(
        [allowed.code, JSON.parse(allowed.stdout)],
        [0, { dry_run: true, would_start: 1, skipped_expired_links: 0, skipped_payload_removed: 0, more: true }],
      );
      const started = await cli('redeliver', '--all', ...flags);
      assert.deepEqual(
        [started.code, JSON.parse(started.stdout)],
        [0, { started: 1, skipped_expired_links: 1, skipped_payload_removed: 0, more: false }],
      );

      const bad = await cli('redeliver', '--all', '--status', 'waiting', '--dry-run');
      assert.deepEqual([bad.code, bad.stdout], [2, '']);
      assert.match(
        bad.stderr,
        /^partner-service webhooks: status: must be one of delivered, failed, cancelled, terminated/,
      );
      const single = await cli('redeliver', done, '--dry-run');
      assert.deepEqual([single.code, single.stdout], [2, '']);
      assert.match(single.stderr, /--dry-run previews a bulk redelivery: it goes with --all/);
    });
  });
});
