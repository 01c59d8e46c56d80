// The real histories with encrypted payloads (test/fixtures/real-histories/encrypted/, written by its
// encrypt.ts under a test-only key) replay with the service's codec data converter: the same timers and end
// state as in clear. Without the codec, or with only another key, they do not replay.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { dataConverterFor } from '../../temporal/settings';
import { loadConfig } from '../../lib/config';
import { FIXTURE_PAYLOAD_ENCRYPTION_KEYS } from '../fixtures/real-histories/encrypt';
import { historyPayloads, leftInClear, occurrencesIn } from '../support/history';
import { testWorkflowBundle } from '../support/temporal';
import {
  readRealHistory,
  REAL_HISTORIES,
  REAL_HISTORY_SCENARIOS,
  replayCapturing,
} from '../support/real-history-scenarios';
import { installQuietTemporalRuntime } from '../support/temporal-runtime';

// After a rotation the fixture key is the old one: second in the list, still decrypting.
const rotated = loadConfig({
  PAYLOAD_ENCRYPTION_KEYS: `newer:${randomBytes(32).toString('base64')} ${FIXTURE_PAYLOAD_ENCRYPTION_KEYS}`,
});

describe('replay of real histories with encrypted payloads', function () {
  this.timeout(60_000);
  let code: string;

  before(async () => {
    installQuietTemporalRuntime();
    code = await testWorkflowBundle([require.resolve('../support/capture-interceptors')]);
  });

  it('has an encrypted history for every scenario, with no payload left in clear but where the server leaves them', () => {
    const files = readdirSync(path.join(REAL_HISTORIES, 'encrypted'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace(/\.json$/, ''));
    assert.deepEqual(files.sort(), Object.keys(REAL_HISTORY_SCENARIOS).sort());
    for (const name of files) {
      const history = readRealHistory(`encrypted/${name}`);
      assert.equal(occurrencesIn(history, 'ada@example.org'), 0, name);
      const clear = historyPayloads<{ metadata: Record<string, Uint8Array> }>(history).filter(
        ({ payload }) => Buffer.from(payload.metadata.encoding).toString() !== 'binary/encrypted',
      );
      assert.deepEqual(
        clear.filter(({ path: at }) => !leftInClear(at)).map(({ path: at }) => at),
        [],
        name,
      );
    }
  });

  for (const [name, expected] of Object.entries(REAL_HISTORY_SCENARIOS)) {
    it(`replays encrypted/${name} with the codec (its key second after a rotation): same timers and end state`, async () => {
      const { timers, statuses } = await replayCapturing(code, `encrypted/${name}`, dataConverterFor(rotated));
      assert.deepEqual(
        timers.map((t) => t.durationMs),
        expected.timers,
      );
      const last = statuses.at(-1)!;
      assert.deepEqual([last.status.state, last.status.attempts.length], [expected.state, expected.attempts]);
    });
  }

  it('does not replay without the codec, nor with only another key', async () => {
    const history = readRealHistory('encrypted/delivered-second-attempt');
    // Only the encrypted payloads may be what stops it: any other failure of the replay is not this test's answer.
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle: { code } }, history),
      /Unknown encoding: binary\/encrypted/,
    );
    const otherKey = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `fixture-2025:${randomBytes(32).toString('base64')}` });
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle: { code }, dataConverter: dataConverterFor(otherKey) }, history),
      /authentication failed/,
    );
  });
});
