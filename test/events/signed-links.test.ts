// Signed links have lifetimes (spec section 8): candidate files 24 h, file answers 2 h. The links were signed no
// later than the service accepted the event, so acceptance plus the lifetime is a deadline after which they are
// certainly dead. Every attempt is dated against it with a clock the test controls.
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { loadConfig } from '../../lib/config';
import { createActivities } from '../../activities/webhooks/delivery';
import { toEnvelope, type WebhookEnvelope, type WebhookEventInput } from '../../events/envelope';
import { expiredSignedLinks, signedLinkDeadlines, signedLinkKinds } from '../../events/signed-links';
import { insertWebhook } from '../../store/ingestion/webhook-ingestion';
import { loadWebhookView } from '../../store/webhooks/webhook-view';
import { webhookIds } from '../../application/ingestion/ids';
import type { DeliverAttemptInput, DeliveredAttempt, WebhookRef } from '../../lib/delivery';
import candidateNew from '../fixtures/events/candidate-new.json';
import candidateShort from '../fixtures/events/candidate-new-short.json';
import jobNew from '../fixtures/events/job-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { answer, startPartnerServer, type PartnerServer } from '../support/partner-server';
import { capturingLogger } from '../support/capturing-logger';
import { IN_CLEAR } from '../support/at-rest';
import { PARTNER_TOKEN } from '../support/tokens';

/** deliverAttempt where the partner gate is open: it never answers held here. */
type DeliverAttemptOnly = (input: DeliverAttemptInput) => Promise<DeliveredAttempt>;

const HOUR = 3600_000;
const candidate = toEnvelope(candidateNew as WebhookEventInput);

/** The candidate event with some of its links removed. */
function candidateWith({ files, fileAnswers }: { files: boolean; fileAnswers: boolean }): WebhookEnvelope {
  const event = structuredClone(candidate) as {
    data: { candidate: { files: Record<string, string | null>; answers: { answer_type: string }[] } };
  };
  if (!files) for (const name of Object.keys(event.data.candidate.files)) event.data.candidate.files[name] = null;
  if (!fileAnswers) event.data.candidate.answers = event.data.candidate.answers.filter((a) => a.answer_type !== 'file');
  return event as unknown as WebhookEnvelope;
}

describe('signed links and their deadlines', () => {
  describe('which links an event carries', () => {
    it('files when a member of candidate.files is a url, file answers when an answer has answer_type file', () => {
      assert.deepEqual(signedLinkKinds(candidate), ['files', 'file_answers']);
      assert.deepEqual(signedLinkKinds(candidateWith({ files: false, fileAnswers: true })), ['file_answers']);
      assert.deepEqual(signedLinkKinds(candidateWith({ files: true, fileAnswers: false })), ['files']);
      assert.deepEqual(signedLinkKinds(candidateWith({ files: false, fileAnswers: false })), []);
      assert.deepEqual(
        signedLinkKinds(toEnvelope(candidateShort as WebhookEventInput)),
        [],
        'the short sample carries no files or answers',
      );
      assert.deepEqual(signedLinkKinds(toEnvelope(jobNew as WebhookEventInput)), []);
    });

    it('dates each kind from the acceptance: dead strictly after acceptance + 24 h (files) and + 2 h (file answers)', () => {
      const acceptedAt = new Date('2026-11-20T08:00:00.000Z');
      assert.deepEqual(signedLinkDeadlines(candidate, acceptedAt), [
        { kind: 'files', expiresAt: new Date('2026-11-21T08:00:00.000Z') },
        { kind: 'file_answers', expiresAt: new Date('2026-11-20T10:00:00.000Z') },
      ]);
      const at = (ms: number) => new Date(acceptedAt.getTime() + ms);
      assert.deepEqual(expiredSignedLinks(candidate, acceptedAt, at(2 * HOUR)), []);
      assert.deepEqual(expiredSignedLinks(candidate, acceptedAt, at(2 * HOUR + 1)), ['file_answers']);
      assert.deepEqual(expiredSignedLinks(candidate, acceptedAt, at(24 * HOUR)), ['file_answers']);
      assert.deepEqual(expiredSignedLinks(candidate, acceptedAt, at(24 * HOUR + 1)), ['files', 'file_answers']);
    });
  });

  describe('an attempt sent with a clock the test controls', function () {
    this.timeout(20_000);
    let db: TestDatabase;
    let partner: PartnerServer;
    const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR', () => {}) });

    before(async () => {
      db = await createTestDatabase();
      partner = await startPartnerServer(answer(204));
    });
    after(async () => {
      await partner.close();
      await db.drop();
    });

    /** One first attempt of a stored candidate event, sent `afterMs` after the row's acceptance time. */
    async function sendAfter(afterMs: number, event: WebhookEnvelope = candidate) {
      const ids = webhookIds({ ...event, event_id: `links-${afterMs}-${Math.random().toString(36).slice(2)}` });
      const webhook: WebhookRef = {
        webhookId: ids.webhookId,
        eventId: ids.eventId,
        workflowId: ids.workflowId,
        runId: 'run-1',
        isTest: false,
      };
      await insertWebhook(db.knex, IN_CLEAR, { ...webhook, event, runId: null });
      const { accepted_at: acceptedAt } = await db
        .knex('webhook_events')
        .where({ id: ids.webhookId })
        .first('accepted_at');
      const captured = capturingLogger();
      const config = loadConfig({ PARTNER_ENDPOINT: partner.url, PARTNER_ACCESS_TOKEN: PARTNER_TOKEN });
      const activities = createActivities({
        config: () => config,
        knex: db.knex,
        logger: captured.logger,
        now: () => new Date(acceptedAt.getTime() + afterMs),
      });
      const input: DeliverAttemptInput = {
        webhookId: ids.webhookId,
        attempt: 1,
        event,
        scheduledAt: acceptedAt.toISOString(),
        finalOnFailure: false,
        webhook,
      };
      const delivered: DeliveredAttempt = await env.run(activities.deliverAttempt as DeliverAttemptOnly, input);
      const view = (await loadWebhookView(db.knex, IN_CLEAR, ids.webhookId))!;
      const warnings = captured.entries().filter((entry) => entry.level === 40);
      return { delivered, view, warnings, acceptedAt: acceptedAt as Date, webhookId: ids.webhookId };
    }

    it('on time: the POST goes out, the record says no link was past its deadline, and nothing is logged', async () => {
      partner.requests.length = 0;
      const { delivered, view, warnings } = await sendAfter(2 * HOUR);
      assert.equal(partner.requests.length, 1);
      assert.deepEqual(
        [delivered.outcome.httpStatus, delivered.outcome.expiredLinks, delivered.needsRecord],
        [204, undefined, false],
      );
      assert.deepEqual(
        view.attempts.map((a: { expired_links: string[] }) => a.expired_links),
        [[]],
      );
      assert.deepEqual(warnings, []);
    });

    it("past the file answers' deadline: sent all the same (the schedule does not change), recorded and logged as such", async () => {
      partner.requests.length = 0;
      const { delivered, view, warnings, acceptedAt, webhookId } = await sendAfter(2 * HOUR + 1);
      assert.equal(partner.requests.length, 1, 'the POST is still made');
      assert.deepEqual([delivered.outcome.httpStatus, delivered.outcome.expiredLinks], [204, ['file_answers']]);
      assert.deepEqual(
        view.attempts.map((a: { expired_links: string[] }) => a.expired_links),
        [['file_answers']],
      );
      assert.equal(view.status, 'delivered');
      assert.deepEqual(
        warnings.map(({ msg, ...fields }) => ({
          msg,
          ...fields,
          time: undefined,
          pid: undefined,
          hostname: undefined,
        })),
        [
          {
            msg: 'sending signed links that are past their deadline: the partner cannot fetch them',
            level: 40,
            webhookId,
            attempt: 1,
            expiredLinks: ['file_answers'],
            acceptedAt: acceptedAt.toISOString(),
            time: undefined,
            pid: undefined,
            hostname: undefined,
          },
        ],
      );
    });

    it('past both deadlines: files and file answers; an event with only files counts only files', async () => {
      assert.deepEqual((await sendAfter(24 * HOUR + 1)).delivered.outcome.expiredLinks, ['files', 'file_answers']);
      const onlyFiles = await sendAfter(3 * HOUR, candidateWith({ files: true, fileAnswers: false }));
      assert.deepEqual([onlyFiles.delivered.outcome.expiredLinks, onlyFiles.warnings], [undefined, []]);
    });
  });
});
