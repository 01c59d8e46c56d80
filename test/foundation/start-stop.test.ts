import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findFreePort } from '../../lib/ports';
import { listProcesses } from '../../lib/child-processes';
import { CLI } from '../support/cli';
import companySignup from '../fixtures/events/company-signup.json';
import { postWebhook } from '../support/api';
import { INTERNAL_TOKEN } from '../support/tokens';

// `partner-service start` with nothing configured (embedded PostgreSQL, a Temporal dev server, the partner inbox),
// stopped by a signal at each step of its start-up and once it is ready: it exits 0 within STOP_BOUND_MS of the
// signal (a signal before the CLI has loaded ends it by Node's default action) and leaves no process behind. And
// the first 200 of /readyz means the worker polls and a webhook is accepted.

const STOP_BOUND_MS = 2000;

/** When the signal is sent: ms after the spawn, a log line (the step it announces is then under way), or ready. */
type Moment = { afterMs: number } | { onLog: RegExp } | 'ready';

interface Run {
  /** ms from the signal to the exit. */
  readonly stopMs: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The body of /readyz's first 200, and the status of POST /internal/v1/webhooks sent right after it, if it came. */
  readonly firstReady: { readonly body: unknown; readonly webhookStatus: number } | undefined;
  /** Processes of the start's process group, or naming its data directory, still alive after it exited. */
  readonly leftOver: string[];
  /** Its DATA_DIR. */
  readonly dataDir: string;
}

/** Every live process whose process group is `pgid` or whose command line names `dir`. */
const processesOf = (pgid: number, dir: string): string[] =>
  listProcesses()
    .filter((p) => p.pgrp === pgid || p.args.includes(dir))
    .map((p) => `${p.pid} ${p.args}`);

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );

/** Runs `start` on `dataDir` (a new one unless given) and sends `signal` at `moment`. */
async function startAndStop(
  work: string,
  moment: Moment,
  signal: NodeJS.Signals,
  { dataDir = '', logLevel = 'info' } = {},
): Promise<Run> {
  dataDir ||= await mkdtemp(path.join(work, 'data-'));
  const port = await findFreePort();
  const api = `http://127.0.0.1:${port}`;
  // Its own process group, so that every process it starts can be found (and killed if the test fails).
  const child = spawn(process.execPath, [CLI, 'start'], {
    cwd: work,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      LOG_LEVEL: logLevel,
    },
  });
  const exit = exited(child);
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stdout += d));
  try {
    let firstReadyAnswer: Run['firstReady'];
    let alive = true;
    void exit.then(() => (alive = false));
    // Polls /readyz from the spawn on; at its first 200, sends a webhook at once.
    const firstReady = (async () => {
      while (alive) {
        const ready = await fetch(`${api}/readyz`).then(
          async (r) => ({ status: r.status, body: await r.json() }),
          () => undefined,
        );
        if (ready?.status === 200) {
          const response = await postWebhook(api, INTERNAL_TOKEN, {
            ...companySignup,
            event_id: `start-stop-${process.pid}-${Date.now()}`,
          });
          firstReadyAnswer = { body: ready.body, webhookStatus: response.status };
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    if (moment === 'ready') await firstReady;
    else if ('afterMs' in moment) await new Promise((r) => setTimeout(r, moment.afterMs));
    else {
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (moment.onLog.test(stdout)) resolve();
          else if (!alive) reject(new Error(`exited before logging ${moment.onLog}:\n${stdout}`));
          else setTimeout(check, 5);
        };
        check();
      });
    }
    assert.ok(alive, `start exited before the signal:\n${stdout}`);
    const sent = Date.now();
    child.kill(signal);
    const { code, signal: killedBy } = await exit;
    const stopMs = Date.now() - sent;
    await firstReady;
    return {
      stopMs,
      code,
      signal: killedBy,
      stdout,
      firstReady: firstReadyAnswer,
      leftOver: processesOf(child.pid!, dataDir),
      dataDir,
    };
  } finally {
    // Whatever the outcome, nothing of this start outlives the test.
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The group is empty.
    }
  }
}

describe('start stops promptly at any moment', function () {
  this.timeout(60_000);
  let work: string;
  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'pis-start-stop-'));
  });
  after(async () => rm(work, { recursive: true, force: true }));

  const moments: { name: string; moment: Moment; signal: NodeJS.Signals }[] = [
    // Before the CLI has loaded, Node's default action ends the process: nothing has been started yet.
    { name: 'immediately', moment: { afterMs: 0 }, signal: 'SIGTERM' },
    {
      name: 'while initdb prepares the embedded PostgreSQL',
      moment: { onLog: /initialising embedded PostgreSQL data directory/ },
      signal: 'SIGTERM',
    },
    {
      name: 'while the migrations run',
      moment: { onLog: /DATABASE_URL is not set: using embedded PostgreSQL/ },
      signal: 'SIGINT',
    },
    {
      name: 'while the Temporal dev server starts',
      moment: { onLog: /starting a Temporal dev server/ },
      signal: 'SIGTERM',
    },
    {
      name: 'while the worker registers and creates its workers',
      moment: { onLog: /"msg":"connected to Temporal"/ },
      signal: 'SIGTERM',
    },
    { name: 'once /readyz answers 200', moment: 'ready', signal: 'SIGTERM' },
  ];
  /** The data directory of the run stopped once ready: PostgreSQL initialised and migrated there. */
  let readyDataDir: string | undefined;
  for (const { name, moment, signal } of moments) {
    it(`${signal} ${name}: stops within ${STOP_BOUND_MS} ms, no process left`, async () => {
      const run = await startAndStop(work, moment, signal);
      console.log(`      ${signal} ${name}: exited in ${run.stopMs} ms`);
      if (moment === 'ready') {
        readyDataDir = run.dataDir;
        // Ready means the worker polls; and a webhook posted at that very moment is accepted.
        assert.deepEqual(run.firstReady, {
          body: { status: 'ready', checks: { database: 'ok', temporal: 'polling' } },
          webhookStatus: 202,
        });
      }
      // initdb's half-made directory is removed, so the next start initialises it afresh.
      if (name.includes('initdb')) assert.equal(existsSync(path.join(run.dataDir, 'postgres')), false);
      assertStopped(run, signal, name === 'immediately' ? { code: null, signal } : { code: 0, signal: null });
    });
  }

  it(`SIGTERM while PostgreSQL starts on an existing data directory: stops within ${STOP_BOUND_MS} ms, no process left`, async () => {
    const dataDir = readyDataDir ?? (await startAndStop(work, 'ready', 'SIGTERM')).dataDir;
    const run = await startAndStop(work, { onLog: /"msg":"starting embedded PostgreSQL"/ }, 'SIGTERM', {
      dataDir,
      logLevel: 'debug',
    });
    console.log(`      SIGTERM while PostgreSQL starts on an existing data directory: exited in ${run.stopMs} ms`);
    assertStopped(run, 'SIGTERM', { code: 0, signal: null });
    assert.equal(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), false);
  });
});

function assertStopped(run: Run, signal: NodeJS.Signals, expected: Pick<Run, 'code' | 'signal'>): void {
  assert.deepEqual(run.leftOver, []);
  assert.deepEqual({ code: run.code, signal: run.signal }, expected, run.stdout);
  assert.ok(run.stopMs < STOP_BOUND_MS, `exited ${run.stopMs} ms after ${signal}:\n${run.stdout}`);
}
