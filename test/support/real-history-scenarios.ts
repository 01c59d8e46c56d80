// The scenarios captured from a real dev server (test/fixtures/real-histories/), and a replay that reports
// what the workflow commanded, shared by the plain and the encrypted replay tests.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker, type InjectedSinks } from '@temporalio/worker';
import type { CapturedStatus, CapturedTimer, CaptureSinks } from './capture-interceptors';

export const REAL_HISTORIES = path.join(__dirname, '..', 'fixtures', 'real-histories');

/** What each captured run commanded: the timers (spec section 8) and where the status query ends. */
export const REAL_HISTORY_SCENARIOS: Record<string, { timers: number[]; state: string; attempts: number }> = {
  'delivered-first-attempt': { timers: [], state: 'delivered', attempts: 1 },
  'delivered-second-attempt': { timers: [10_000], state: 'delivered', attempts: 2 },
  'waiting-after-second-failure': { timers: [10_000, 100_000], state: 'waiting', attempts: 2 },
  'cancelled-while-waiting': { timers: [10_000], state: 'cancelled', attempts: 1 },
  'failed-all-four-attempts': { timers: [10_000, 100_000, 1_000_000], state: 'failed', attempts: 4 },
};

export const readRealHistory = (name: string) =>
  historyFromJSON(JSON.parse(readFileSync(path.join(REAL_HISTORIES, `${name}.json`), 'utf8')));

/** Replays `name` (e.g. `current/delivered-first-attempt`) with the capture interceptors bundled in `code`. */
export async function replayCapturing(
  code: string,
  name: string,
  dataConverter?: DataConverter,
): Promise<{ timers: CapturedTimer[]; statuses: CapturedStatus[] }> {
  const timers: CapturedTimer[] = [];
  const statuses: CapturedStatus[] = [];
  const sinks: InjectedSinks<CaptureSinks> = {
    capture: {
      timer: { fn: (_info, timer) => void timers.push(structuredClone(timer)), callDuringReplay: true },
      activity: { fn: () => undefined, callDuringReplay: true },
      status: { fn: (_info, status) => void statuses.push(structuredClone(status)), callDuringReplay: true },
    },
  };
  await Worker.runReplayHistory({ workflowBundle: { code }, sinks, dataConverter }, readRealHistory(name));
  return { timers, statuses };
}
