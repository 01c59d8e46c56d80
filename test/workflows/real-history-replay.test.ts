// Histories captured from a real dev server (test/fixtures/real-histories/capture.ts) replay against today's
// workflow code. A change of the commands a run issues fails here; see "Changing the workflow safely" in
// docs/webhooks.md for how such a change is deployed.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import {
  REAL_HISTORIES,
  REAL_HISTORY_SCENARIOS,
  readRealHistory,
  replayCapturing,
} from '../support/real-history-scenarios';
import { testWorkflowBundle } from '../support/temporal';
import { installQuietTemporalRuntime } from '../support/temporal-runtime';

const EXPECTED = REAL_HISTORY_SCENARIOS;
const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

describe('replay of histories captured from a real dev server', function () {
  this.timeout(60_000);
  let code: string;

  before(async () => {
    installQuietTemporalRuntime();
    code = await testWorkflowBundle([require.resolve('../support/capture-interceptors')]);
  });

  it('has a captured history for every scenario, and no other', () => {
    const files = readdirSync(path.join(REAL_HISTORIES, 'current'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace(/\.json$/, ''));
    assert.deepEqual(files.sort(), Object.keys(EXPECTED).sort());
  });

  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`replays current/${name} with the same timers and end state`, async () => {
      const { timers, statuses } = await replayCapturing(code, `current/${name}`);
      assert.deepEqual(
        timers.map((t) => t.durationMs),
        expected.timers,
      );
      assert.deepEqual(
        timers.map((t) => t.summary),
        expected.timers.map((ms, i) => `retry ${i + 1} of 3 in ${ms / 1000} s`),
      );
      const last = statuses.at(-1)!;
      assert.deepEqual([last.status.state, last.status.attempts.length], [expected.state, expected.attempts]);
    });
  }

  it('a first-try delivery is 6 events: start, one workflow task, the attempt, done; no patch marker and no status upsert', () => {
    const history = JSON.parse(
      readFileSync(path.join(REAL_HISTORIES, 'current', 'delivered-first-attempt.json'), 'utf8'),
    ) as { events: { eventType: string }[] };
    assert.deepEqual(
      history.events.map((e) => e.eventType.replace('EVENT_TYPE_', '')),
      [
        'WORKFLOW_EXECUTION_STARTED',
        'WORKFLOW_TASK_SCHEDULED',
        'WORKFLOW_TASK_STARTED',
        'WORKFLOW_TASK_COMPLETED',
        'MARKER_RECORDED',
        'WORKFLOW_EXECUTION_COMPLETED',
      ],
    );
  });

  it('replays retry-now/delivered-after-retry-now: the 10 s timer cut short, attempt 2 made at once and marked manual', async () => {
    const { timers, statuses } = await replayCapturing(code, 'retry-now/delivered-after-retry-now');
    assert.deepEqual(
      timers.map((t) => [t.durationMs, t.summary]),
      [[10_000, 'retry 1 of 3 in 10 s']],
    );
    const last = statuses.at(-1)!;
    assert.deepEqual(
      [last.status.state, last.status.attempts.map((a) => a.trigger ?? 'schedule')],
      ['delivered', ['schedule', 'manual']],
    );
    const history = readFileSync(path.join(REAL_HISTORIES, 'retry-now', 'delivered-after-retry-now.json'), 'utf8');
    for (const event of ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'EVENT_TYPE_TIMER_CANCELED'])
      assert.ok(history.includes(event), event);
    assert.ok(!history.includes('core_patch'), 'a retry-now needs no patch marker');
  });

  it('fails with DeterminismViolationError when the code issues other commands than a real history (here: one more timer)', async () => {
    const { code: changed } = await bundleWorkflowCode({
      workflowsPath: require.resolve('../support/changed-workflow'),
      logger: quietBundler,
    });
    for (const name of Object.keys(EXPECTED)) {
      await assert.rejects(
        Worker.runReplayHistory({ workflowBundle: { code: changed } }, readRealHistory(`current/${name}`)),
        DeterminismViolationError,
        name,
      );
    }
  });
});
