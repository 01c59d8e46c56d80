import type { Knex } from 'knex';
import { dataAtRest } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import { recordEncryptedSince, refuseClearWriteIfKeyed } from '../../store/personal-data/at-rest-settings';

// The keyed fact at a process's start (store/personal-data/at-rest-settings.ts): a process with keys records it; the
// worker without keys in a keyed deployment refuses to start, since it could record no attempt.

/**
 * A process with PAYLOAD_ENCRYPTION_KEYS makes the deployment keyed for good: no process writes bodies in clear after.
 */
export async function recordKeyedDeployment(knex: Knex, config: Config): Promise<void> {
  if (dataAtRest(config).keys.length) await recordEncryptedSince(knex);
}

/** Throws EncryptionRequiredError (exit 2, one line) for a process without keys in a keyed deployment. */
export async function refuseToStartWithoutKeys(knex: Knex, config: Config): Promise<void> {
  await refuseClearWriteIfKeyed(knex, dataAtRest(config));
}
