// Histories captured from a real dev server (test/fixtures/real-histories/capture.ts) replay against today's
// workflow code. A change that would break deliveries already running fails here; see "Changing the
// workflow safely" in docs/webhooks.md for patched().
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DeterminismViolationError } from '@temporalio/workflow';
import { REAL_HISTORIES, REAL_HISTORY_SCENARIOS, replayCapturing } from './support/real-history-scenarios';
import { testWorkflowBundle } from '../support/temporal';
import { installQuietTemporalRuntime } from './support/temporal-runtime';

/** One folder per workflow shape: runs of each may be in flight when the code changes. */
const SHAPES = ['first-shape', 'single-task'];
const EXPECTED = REAL_HISTORY_SCENARIOS;

describe('replay of histories captured from a real dev server', function () {
  this.timeout(60_000);
  let code: string;

  before(async () => {
    installQuietTemporalRuntime();
    code = await testWorkflowBundle([require.resolve('./support/capture-interceptors')]);
  });

  for (const shape of SHAPES) {
    it(`has a captured ${shape} history for every scenario, and no other`, () => {
      const files = readdirSync(path.join(REAL_HISTORIES, shape)).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, ''));
      assert.deepEqual(files.sort(), Object.keys(EXPECTED).sort());
    });
  }

  for (const [name, expected] of SHAPES.flatMap((shape) => Object.entries(EXPECTED).map(([name, e]) => [`${shape}/${name}`, e] as const))) {
    it(`replays ${name} with the same timers and end state`, async () => {
      const { timers, statuses } = await replayCapturing(code, name);
      assert.deepEqual(timers.map((t) => t.durationMs), expected.timers);
      assert.deepEqual(timers.map((t) => t.summary), expected.timers.map((ms, i) => `retry ${i + 1} of 3 in ${ms / 1000} s`));
      const last = statuses.at(-1)!;
      assert.deepEqual([last.status.state, last.status.attempts.length], [expected.state, expected.attempts]);
    });
  }

  it('replays retry-now/delivered-after-retry-now: the 10 s timer cut short, attempt 2 made at once and marked manual', async () => {
    const { timers, statuses } = await replayCapturing(code, 'retry-now/delivered-after-retry-now');
    assert.deepEqual(timers.map((t) => [t.durationMs, t.summary]), [[10_000, 'retry 1 of 3 in 10 s']]);
    const last = statuses.at(-1)!;
    assert.deepEqual([last.status.state, last.status.attempts.map((a) => a.trigger ?? 'schedule')], ['delivered', ['schedule', 'manual']]);
    const history = readFileSync(path.join(REAL_HISTORIES, 'retry-now', 'delivered-after-retry-now.json'), 'utf8');
    for (const event of ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'EVENT_TYPE_TIMER_CANCELED']) assert.ok(history.includes(event), event);
  });

  it('fails when the code no longer issues the commands of a real history (here: an activity renamed)', async () => {
    const json = readFileSync(path.join(REAL_HISTORIES, 'first-shape', 'delivered-second-attempt.json'), 'utf8').replaceAll('"sendWebhook"', '"postWebhook"');
    await assert.rejects(Worker.runReplayHistory({ workflowBundle: { code } }, historyFromJSON(JSON.parse(json))), DeterminismViolationError);
  });
});
