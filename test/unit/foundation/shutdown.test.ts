import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { StartAbortedError, unlessStopping } from '../../../lib/abort';
import { createLogger } from '../../../lib/logger';
import { Shutdown } from '../../../lib/shutdown';

describe('Shutdown', () => {
  it('runs the steps last registered first, a withPrevious step at the same time as the one before it', async () => {
    const shutdown = new Shutdown(createLogger('silent'));
    const events: string[] = [];
    const step = (name: string, ms: number) => async () => {
      events.push(`${name} begins`);
      await delay(ms);
      events.push(`${name} ends`);
    };
    shutdown.add('database', step('database', 30));
    shutdown.add('dev server', step('dev server', 10), { withPrevious: true });
    shutdown.add('worker', step('worker', 10));
    await shutdown.shutdown();
    assert.deepEqual(events, [
      'worker begins',
      'worker ends',
      'dev server begins',
      'database begins',
      'dev server ends',
      'database ends',
    ]);
  });

  it('aborts its signal at once and runs the steps once the start-up has unwound, those it registered last included', async () => {
    const shutdown = new Shutdown(createLogger('silent'));
    const events: string[] = [];
    shutdown.add('database', () => void events.push('database stopped'));
    const startup = shutdown.starting(async () => {
      // A step that takes 50 ms to give up, and registers what it had started before it rethrows.
      const step = new AbortController();
      const work = delay(10_000, undefined, { signal: step.signal }).catch(() => undefined);
      await unlessStopping(shutdown.signal, work, async () => {
        await delay(50);
        shutdown.add('dev server', () => void events.push('dev server stopped'));
        events.push('start-up gave up');
        step.abort();
      });
      return 0;
    });
    const stopped = shutdown.shutdown();
    assert.equal(shutdown.signal.aborted, true);
    await assert.rejects(startup, StartAbortedError);
    await stopped;
    assert.deepEqual(events, ['start-up gave up', 'dev server stopped', 'database stopped']);
  });
});

describe('unlessStopping', () => {
  it("returns the work's value when no abort comes", async () => {
    assert.equal(await unlessStopping(new AbortController().signal, Promise.resolve(7)), 7);
  });

  it("rethrows the work's own failure", async () => {
    await assert.rejects(
      unlessStopping(new AbortController().signal, Promise.reject(new Error('initdb failed'))),
      /initdb failed/,
    );
  });

  it('on abort, cancels, waits for the work to settle, then throws StartAbortedError', async () => {
    const abort = new AbortController();
    let settled = false;
    let finish!: () => void;
    const work = new Promise<void>((resolve) => (finish = resolve)).then(() => void (settled = true));
    const result = unlessStopping(abort.signal, work, () => setTimeout(finish, 30));
    abort.abort();
    await assert.rejects(result, StartAbortedError);
    assert.equal(settled, true);
  });
});
