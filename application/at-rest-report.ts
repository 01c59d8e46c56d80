import type { Knex } from 'knex';
import { dataAtRest } from '../lib/at-rest';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { countSealedUnderUnlistedKeys } from '../store/sealed-keys';

/**
 * Says at the worker's start how personal data rests: sealed under which key, or in clear; how many bodies and
 * excerpts a rotation left under keys no longer listed (unreadable until their key is listed again); and whether
 * the subject index uses the public development key. One line each; the count, which reads PostgreSQL, last.
 */
export async function reportDataAtRest(knex: Knex, config: Config, logger: Logger): Promise<void> {
  const atRest = dataAtRest(config);
  const [encryptWith] = atRest.keys;
  if (encryptWith) logger.info({ keyId: encryptWith.id }, `webhook bodies and response excerpts are stored encrypted (AES-256-GCM) with key ${encryptWith.id}`);
  else logger.warn('PAYLOAD_ENCRYPTION_KEYS is not set: webhook bodies and response excerpts are stored in clear in PostgreSQL');
  if (atRest.developmentSubjectKey) logger.warn('SUBJECT_INDEX_KEY is not set: the erasure index is keyed with the public development key');
  // A count that fails (PostgreSQL not up yet) must not stop the worker: the line is then missing, not wrong.
  const unlisted = await countSealedUnderUnlistedKeys(knex, atRest.keys.map(({ id }) => id)).catch((error: unknown) => {
    logger.warn({ err: error }, 'could not count the bodies sealed under keys no longer listed');
    return undefined;
  });
  if (unlisted && unlisted.bodies + unlisted.excerpts > 0) {
    logger.warn(
      unlisted,
      `${unlisted.bodies} bodies and ${unlisted.excerpts} response excerpts are sealed under key ids PAYLOAD_ENCRYPTION_KEYS no longer lists (${unlisted.keyIds.join(', ')}): they cannot be read until that key is listed again`,
    );
  }
}
