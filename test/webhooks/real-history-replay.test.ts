// Histories captured from a real dev server (test/fixtures/real-histories/capture.ts) replay against today's
// workflow code. A change that would break deliveries already running fails here; see "Changing the
// workflow safely" in docs/webhooks.md for patched().
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker, type InjectedSinks } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DeterminismViolationError } from '@temporalio/workflow';
import type { CapturedStatus, CapturedTimer, CaptureSinks } from './support/capture-interceptors';
import { testWorkflowBundle } from '../support/temporal';
import { installQuietTemporalRuntime } from './support/temporal-runtime';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'real-histories');
/** One folder per workflow shape: runs of each may be in flight when the code changes. */
const SHAPES = ['first-shape', 'single-task'];

/** What each captured run commanded: the timers (spec section 8) and where the status query ends. */
const EXPECTED: Record<string, { timers: number[]; state: string; attempts: number }> = {
  'delivered-first-attempt': { timers: [], state: 'delivered', attempts: 1 },
  'delivered-second-attempt': { timers: [10_000], state: 'delivered', attempts: 2 },
  'waiting-after-second-failure': { timers: [10_000, 100_000], state: 'waiting', attempts: 2 },
  'cancelled-while-waiting': { timers: [10_000], state: 'cancelled', attempts: 1 },
  'failed-all-four-attempts': { timers: [10_000, 100_000, 1_000_000], state: 'failed', attempts: 4 },
};

describe('replay of histories captured from a real dev server', function () {
  this.timeout(60_000);
  let code: string;

  before(async () => {
    installQuietTemporalRuntime();
    code = await testWorkflowBundle([require.resolve('./support/capture-interceptors')]);
  });

  for (const shape of SHAPES) {
    it(`has a captured ${shape} history for every scenario, and no other`, () => {
      const files = readdirSync(path.join(FIXTURES, shape)).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, ''));
      assert.deepEqual(files.sort(), Object.keys(EXPECTED).sort());
    });
  }

  for (const [name, expected] of SHAPES.flatMap((shape) => Object.entries(EXPECTED).map(([name, e]) => [`${shape}/${name}`, e] as const))) {
    it(`replays ${name} with the same timers and end state`, async () => {
      const json = JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));
      const timers: CapturedTimer[] = [];
      const statuses: CapturedStatus[] = [];
      const sinks: InjectedSinks<CaptureSinks> = {
        capture: {
          timer: { fn: (_info, timer) => void timers.push(structuredClone(timer)), callDuringReplay: true },
          activity: { fn: () => undefined, callDuringReplay: true },
          status: { fn: (_info, status) => void statuses.push(structuredClone(status)), callDuringReplay: true },
        },
      };
      await Worker.runReplayHistory({ workflowBundle: { code }, sinks }, historyFromJSON(json));
      assert.deepEqual(timers.map((t) => t.durationMs), expected.timers);
      assert.deepEqual(timers.map((t) => t.summary), expected.timers.map((ms, i) => `retry ${i + 1} of 3 in ${ms / 1000} s`));
      const last = statuses.at(-1)!;
      assert.deepEqual([last.status.state, last.status.attempts.length], [expected.state, expected.attempts]);
    });
  }

  it('fails when the code no longer issues the commands of a real history (here: an activity renamed)', async () => {
    const json = readFileSync(path.join(FIXTURES, 'first-shape', 'delivered-second-attempt.json'), 'utf8').replaceAll('"sendWebhook"', '"postWebhook"');
    await assert.rejects(Worker.runReplayHistory({ workflowBundle: { code } }, historyFromJSON(JSON.parse(json))), DeterminismViolationError);
  });
});
