// How `start` chooses Temporal. The dev-server path runs for real in test/foundation/cli.test.ts.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../../lib/config';
import { provideLocalTemporal } from '../../temporal/local-temporal';
import { tempDir } from '../support/temporal';
import { capturingLogger } from '../support/capturing-logger';

describe('provideLocalTemporal (the Temporal of npm start)', function () {
  this.timeout(60_000);

  it('uses the configured Temporal (TEMPORAL_ADDRESS) when there is one, and starts nothing', async () => {
    const { logger, entries } = capturingLogger();
    const temporal = await provideLocalTemporal(
      loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233' }),
      logger,
      () => {
        throw new Error('must not look for a binary');
      },
    );
    assert.deepEqual(
      [temporal.address, temporal.uiUrl, temporal.source],
      ['temporal.internal:7233', undefined, 'configured'],
    );
    assert.deepEqual(entries(), []);
  });

  it('uses the address of a temporal.toml profile the same way (the file the temporal CLI reads)', async () => {
    const { logger, entries } = capturingLogger();
    const home = await tempDir('xdg');
    await mkdir(path.join(home, 'temporalio'));
    await writeFile(
      path.join(home, 'temporalio', 'temporal.toml'),
      '[profile.default]\naddress = "cluster.internal:7233"\n',
    );
    const temporal = await provideLocalTemporal(loadConfig({ XDG_CONFIG_HOME: home }), logger, () => {
      throw new Error('must not look for a binary');
    });
    assert.deepEqual([temporal.address, temporal.source], ['cluster.internal:7233', 'configured']);
    assert.deepEqual(entries(), []);
  });

  it('without a CLI, tries the SDK download; where that fails, says in one line that delivery waits', async () => {
    const { logger, entries } = capturingLogger();
    const dataDir = path.join(await tempDir('local-temporal'), 'data');
    const temporal = await provideLocalTemporal(loadConfig({ DATA_DIR: dataDir }), logger, () => undefined);
    try {
      // This machine reaches no download host, so the download fails within milliseconds; elsewhere it may succeed.
      if (temporal.source === 'SDK download') {
        assert.match(temporal.address!, /^127\.0\.0\.1:\d+$/);
        return;
      }
      assert.deepEqual([temporal.address, temporal.uiUrl, temporal.source], [undefined, undefined, 'none']);
      const warnings = entries().filter((entry) => entry.level >= 40);
      assert.equal(warnings.length, 1);
      assert.equal(
        warnings[0].msg,
        'no Temporal: TEMPORAL_ADDRESS is unset, no temporal CLI was found (scripts/install-temporal.sh installs one) and the SDK could not download it; the APIs serve and webhook delivery waits for Temporal',
      );
    } finally {
      await temporal.stop();
    }
  });
});
