import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker, type InjectedSinks } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { recordsTaskQueue } from '../../workflows/types';
import { failedAttempt, type AttemptOutcome, type AttemptRecord } from '../../lib/delivery';
import { WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH } from '../../worker/bundle';
import { renderHistory } from '../fixtures/webhook-histories/generate';
import { scenarios, type Scenario } from '../fixtures/webhook-histories/scenarios';
import type { CapturedActivity, CapturedStatus, CapturedTimer, CaptureSinks } from '../support/capture-interceptors';
import { installQuietTemporalRuntime } from '../support/temporal-runtime';
import { buildDeliveryHistory, REJECTED_MESSAGE } from '../support/history-builder';
import { DEFAULT_TASK_QUEUE } from '../../lib/config';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'webhook-histories');
const TOKEN = 'fixture-partner-token-0f9c1d';
/** Spec section 8, written out rather than imported, so a changed constant fails here. */
const SPEC_DELAYS_MS = [10_000, 100_000, 1_000_000];
const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

interface Captured {
  timers: CapturedTimer[];
  activities: CapturedActivity[];
  statuses: CapturedStatus[];
}

type HistoryEvent = { eventId: string; eventTime: string; eventType: string } & Record<string, any>;

describe('deliverWebhook replay over hand-built histories', function () {
  this.timeout(60_000);
  let code: string;
  const previousToken = process.env.PARTNER_ACCESS_TOKEN;

  before(async () => {
    installQuietTemporalRuntime();
    // The token is configured while replaying: the workflow must still never see it.
    process.env.PARTNER_ACCESS_TOKEN = TOKEN;
    ({ code } = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES, require.resolve('../support/capture-interceptors')],
      logger: quietBundler,
    }));
  });
  after(() => {
    if (previousToken === undefined) delete process.env.PARTNER_ACCESS_TOKEN;
    else process.env.PARTNER_ACCESS_TOKEN = previousToken;
  });

  async function replay(history: unknown, workflowId: string): Promise<Captured> {
    const captured: Captured = { timers: [], activities: [], statuses: [] };
    const sinks: InjectedSinks<CaptureSinks> = {
      capture: {
        timer: { fn: (_info, timer) => void captured.timers.push(structuredClone(timer)), callDuringReplay: true },
        activity: {
          fn: (_info, activity) => void captured.activities.push(structuredClone(activity)),
          callDuringReplay: true,
        },
        status: { fn: (_info, status) => void captured.statuses.push(structuredClone(status)), callDuringReplay: true },
      },
    };
    await Worker.runReplayHistory({ workflowBundle: { code }, sinks }, historyFromJSON(history), workflowId);
    return captured;
  }

  const loadFixture = (scenario: Scenario) =>
    JSON.parse(readFileSync(path.join(FIXTURES, `${scenario.name}.json`), 'utf8')) as { events: HistoryEvent[] };

  /**
   * When attempt `n`'s local activity completed (its marker's complete_time): the workflow's clock once the
   * attempt is back, from which it dates the retry timer.
   */
  function attemptCompleteTime(events: HistoryEvent[], n: number): number {
    const marker = events.filter((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED')[n - 1];
    const data = JSON.parse(
      Buffer.from(marker.markerRecordedEventAttributes.details.data.payloads[0].data, 'base64').toString(),
    );
    return data.complete_time.seconds * 1000 + data.complete_time.nanos / 1e6;
  }

  const firstTaskTime = (events: HistoryEvent[]) =>
    Date.parse(events.find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_STARTED')!.eventTime);

  /** The start of the workflow task in which attempt `n` ran. */
  function taskStartBefore(events: HistoryEvent[], n: number): number {
    const marker = events.filter((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED')[n - 1];
    const before = events.slice(0, events.indexOf(marker)).reverse();
    return Date.parse(before.find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_STARTED')!.eventTime);
  }

  /** What the workflow must have recorded for each attempt result of a scenario. */
  function expectedRecords(scenario: Scenario, events: HistoryEvent[]): AttemptRecord[] {
    return scenario.attempts.map((result, i) => {
      const scheduledAtMs = i === 0 ? firstTaskTime(events) : attemptCompleteTime(events, i) + SPEC_DELAYS_MS[i - 1];
      const scheduledAt = new Date(scheduledAtMs).toISOString();
      if (result !== 'claim-rejected') return { ...result, scheduledAt, trigger: 'schedule' };
      // Workflow time from the start of the attempt's workflow task to the failure of its local activity.
      const durationMs = attemptCompleteTime(events, i + 1) - taskStartBefore(events, i + 1);
      const outcome = failedAttempt(i + 1, {
        errorClass: 'other',
        errorMessage: `attempt could not be claimed: ${REJECTED_MESSAGE}`,
        startedAt: new Date(taskStartBefore(events, i + 1)).toISOString(),
        durationMs,
      });
      return { ...outcome, scheduledAt, trigger: 'schedule' };
    });
  }

  const RECORD_OPTIONS = {
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
    summary: undefined,
    taskQueue: recordsTaskQueue(DEFAULT_TASK_QUEUE),
  };

  it('keeps every JSON history in test/fixtures in step with its scenario', () => {
    for (const scenario of scenarios) {
      const file = readFileSync(path.join(FIXTURES, `${scenario.name}.json`), 'utf8');
      assert.equal(
        file,
        renderHistory(scenario),
        `${scenario.name}.json is stale: run npx tsx test/fixtures/webhook-histories/generate.ts`,
      );
    }
  });

  for (const scenario of scenarios.filter((s) => !s.cut)) {
    it(`replays ${scenario.name} with the exact timers, attempt inputs, records and final status`, async () => {
      const history = loadFixture(scenario);
      const captured = await replay(history, scenario.workflowId);
      const failuresBeforeEnd = scenario.attempts.length - 1;
      const lastResult = scenario.attempts.at(-1)!;
      const delivered = lastResult !== 'claim-rejected' && lastResult.succeeded;

      // Timers: exactly 10 s, 100 s, 1000 s, one per failed attempt that is retried, with UI summaries.
      assert.deepEqual(
        captured.timers,
        SPEC_DELAYS_MS.slice(0, failuresBeforeEnd).map((durationMs, i) => ({
          seq: i + 1,
          durationMs,
          summary: `retry ${i + 1} of 3 in ${durationMs / 1000} s`,
        })),
      );

      // Activities: one deliverAttempt per attempt; record activities only for what the attempts could not write.
      const { webhookId, eventId, event } = scenario.input;
      const webhook = { webhookId, eventId, workflowId: scenario.workflowId, runId: 'fixture-run-id', isTest: false };
      const records = expectedRecords(scenario, history.events);
      const status = delivered ? 'delivered' : 'failed';
      const expected: Array<Omit<CapturedActivity, 'seq'>> = [];
      scenario.attempts.forEach((result, i) => {
        expected.push({
          activityType: 'deliverAttempt',
          args: [
            {
              webhookId,
              attempt: i + 1,
              event,
              timeoutMs: 30_000,
              scheduledAt: records[i].scheduledAt,
              trigger: 'schedule',
              finalOnFailure: i + 1 === 4,
              webhookIdHeader: undefined,
              // Ids only: the claim writes a missing row from the attempt's own `event`.
              webhook,
            },
          ],
          startToCloseTimeout: 45_000,
          retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
          summary: `attempt ${i + 1} of 4`,
          taskQueue: undefined,
        });
        if (!scenario.unrecorded || result === 'claim-rejected') return;
        expected.push({ activityType: 'recordAttempt', args: [{ webhook, attempt: records[i] }], ...RECORD_OPTIONS });
      });
      if (scenario.unrecorded) {
        const lastRecord = captured.activities.at(-1)!;
        assert.equal(lastRecord.activityType, 'recordOutcome');
        const { finishedAt } = lastRecord.args[0] as { finishedAt: string };
        expected.push({ activityType: 'recordOutcome', args: [{ webhook, status, finishedAt }], ...RECORD_OPTIONS });
      }
      // Replay runs the workflow on a generated queue name (fake_replay_queue-N); the records must go to its
      // "-records" sibling, which a real worker names after TEMPORAL_TASK_QUEUE.
      const onNamedQueue = ({ seq: _seq, taskQueue, ...rest }: CapturedActivity) => ({
        ...rest,
        taskQueue: taskQueue?.replace(/^fake_replay_queue-\d+(?=-records$)/, DEFAULT_TASK_QUEUE),
      });
      assert.deepEqual(captured.activities.map(onNamedQueue), expected);
      assert.deepEqual(
        captured.activities.map((a) => a.seq),
        expected.map((_, i) => i + 1),
      );

      // The partner token is in no activity input and not in the workflow input.
      const everything = JSON.stringify([captured, history]);
      assert.ok(!everything.includes(TOKEN), 'the token leaked into the workflow');
      assert.ok(!everything.includes(Buffer.from(TOKEN).toString('base64').slice(0, 20)));
      assert.ok(
        !/"(token|authorization|accessToken)"/i.test(JSON.stringify(captured)),
        'an input carries a token field',
      );

      // The status query after the last step, and the search attributes an operator filters on.
      const last = captured.statuses.at(-1)!;
      assert.deepEqual(last.status, { webhookId, eventId, state: status, attempts: records, nextAttemptAt: null });
      assert.deepEqual(last.searchAttributes, {
        WebhookEventType: event.event_type,
        WebhookAction: event.action,
        // A first-try delivery never shows WebhookStatus: its close status (Completed) says it.
        ...(scenario.attempts.length > 1 || status !== 'delivered' ? { WebhookStatus: status } : {}),
        CompanyId: scenario.companyId,
      });
    });
  }

  it('answers the status query while waiting: attempts so far, state and time of the next attempt', async () => {
    const scenario = scenarios.find((s) => s.name === 'cut-waiting-after-second-failure')!;
    const history = loadFixture(scenario);
    const captured = await replay(history, scenario.workflowId);
    const last = captured.statuses.at(-1)!;
    const records = expectedRecords(scenario, history.events);
    assert.deepEqual(last.status, {
      webhookId: scenario.input.webhookId,
      eventId: scenario.input.eventId,
      state: 'waiting',
      attempts: records,
      nextAttemptAt: new Date(attemptCompleteTime(history.events, 2) + 100_000).toISOString(),
    });
    assert.equal(last.searchAttributes.WebhookStatus, 'waiting');
    assert.deepEqual(
      captured.timers.map((t) => t.durationMs),
      [10_000, 100_000],
    );
  });

  it('answers the status query while the third attempt is in flight', async () => {
    const scenario = scenarios.find((s) => s.name === 'cut-sending-third-attempt')!;
    const history = loadFixture(scenario);
    const captured = await replay(history, scenario.workflowId);
    const last = captured.statuses.at(-1)!;
    assert.equal(last.status.state, 'sending');
    assert.equal(last.status.nextAttemptAt, null);
    assert.deepEqual(
      last.status.attempts.map((a) => a.httpStatus),
      [500, 500],
    );
    assert.equal(last.searchAttributes.WebhookStatus, 'sending');
    const [third] = captured.activities.at(-1)!.args as [Record<string, unknown>];
    assert.deepEqual(
      [captured.activities.at(-1)!.activityType, third.attempt, third.scheduledAt, third.finalOnFailure],
      ['deliverAttempt', 3, new Date(attemptCompleteTime(history.events, 2) + 100_000).toISOString(), false],
    );
  });

  /** A copy of a scenario's history with one attempt marker's local activity result replaced. */
  function withAttemptResult(scenario: Scenario, markerIndex: number, result: unknown): { events: HistoryEvent[] } {
    const history = buildDeliveryHistory(scenario, scenario.companyId) as { events: HistoryEvent[] };
    const marker = history.events.filter((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED')[markerIndex];
    marker.markerRecordedEventAttributes.details.result.payloads[0].data = Buffer.from(JSON.stringify(result)).toString(
      'base64',
    );
    return history;
  }

  it('fails replay when an activity is renamed, because the histories carry coreUsedFlags', async () => {
    const scenario = scenarios.find((s) => s.name === 'delivered-second-attempt-recorded-by-workflow')!;
    const history = loadFixture(scenario);
    const renamed = JSON.parse(JSON.stringify(history).replaceAll('"name":"recordAttempt"', '"name":"storeAttempt"'));
    assert.ok(JSON.stringify(renamed).includes('storeAttempt'));
    await assert.rejects(replay(renamed, scenario.workflowId), DeterminismViolationError);

    // Without the flags, core does not compare activity types: the same rename would pass unnoticed.
    const withoutFlags = JSON.parse(JSON.stringify(renamed));
    for (const e of withoutFlags.events) delete e.workflowTaskCompletedEventAttributes?.sdkMetadata;
    await replay(withoutFlags, scenario.workflowId);
  });

  it('fails replay when the history has a retry timer the code does not start', async () => {
    // Attempt 1 answered 204 in this history, yet a retry timer follows it: the code must disagree.
    const scenario = scenarios.find((s) => s.name === 'delivered-second-attempt')!;
    const success = scenario.attempts[1] as AttemptOutcome;
    const history = withAttemptResult(scenario, 0, { outcome: { ...success, attempt: 1 }, needsRecord: false });
    await assert.rejects(replay(history, scenario.workflowId), DeterminismViolationError);
  });

  it('fails replay when the code would write a record the history does not have', async () => {
    // The attempt reports its record unwritten, so the workflow schedules recordAttempt: a command the history lacks.
    const scenario = scenarios.find((s) => s.name === 'delivered-second-attempt')!;
    const history = withAttemptResult(scenario, 0, { outcome: scenario.attempts[0], needsRecord: true });
    await assert.rejects(replay(history, scenario.workflowId), DeterminismViolationError);
  });
});
