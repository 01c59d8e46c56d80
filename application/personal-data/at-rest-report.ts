import type { Knex } from 'knex';
import { dataAtRest, storedKeyForm } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { countRestingUnder, restingKeyIds, type RestingTexts } from '../../store/personal-data/sealed-keys';
import { indexKeysOf } from '../../store/personal-data/subject-index-keys';
import { DEVELOPMENT_KEY_ID } from '../../lib/subject-index';
import { SubjectIndexKeyError } from '../../lib/errors';

/** Bodies, excerpts and ordering lane keys that rest one way, with the key ids (configured form) among them. */
interface RestCount {
  readonly bodies: number;
  readonly excerpts: number;
  readonly laneKeys: number;
  readonly signingSecrets: number;
  readonly keyIds: string[];
}

/** Sums the counts `which` selects, by kind, with their key ids. */
export function restCount(counts: readonly RestingTexts[], which: (count: RestingTexts) => boolean): RestCount {
  const selected = counts.filter(which);
  const sum = (kind: RestingTexts['kind']) =>
    selected.filter((c) => c.kind === kind).reduce((total, c) => total + c.count, 0);
  const keyIds = [
    ...new Set(selected.flatMap((c) => (c.storedKeyId === null ? [] : [storedKeyForm(c.storedKeyId).keyId]))),
  ].sort();
  return {
    bodies: sum('body'),
    excerpts: sum('excerpt'),
    laneKeys: sum('lane_key'),
    signingSecrets: sum('signing_secret'),
    keyIds,
  };
}

const NAMES: Record<RestingTexts['kind'], readonly [one: string, many: string]> = {
  body: ['body', 'bodies'],
  excerpt: ['response excerpt', 'response excerpts'],
  lane_key: ['ordering lane key', 'ordering lane keys'],
  signing_secret: ['signing secret', 'signing secrets'],
};

/**
 * The sealed counts as an operator reads them, one per kind and key id (both formats summed): `1 ordering lane key
 * under k1`.
 */
export function namedCounts(counts: readonly RestingTexts[]): string[] {
  const sums = new Map<string, { kind: RestingTexts['kind']; keyId: string; count: number }>();
  for (const { kind, storedKeyId, count } of counts) {
    if (storedKeyId === null) continue;
    const keyId = storedKeyForm(storedKeyId).keyId;
    const sum = sums.get(`${kind} ${keyId}`) ?? { kind, keyId, count: 0 };
    sums.set(`${kind} ${keyId}`, { ...sum, count: sum.count + count });
  }
  return [...sums.values()].map(
    ({ kind, keyId, count }) => `${count} ${NAMES[kind][count === 1 ? 0 : 1]} under ${keyId}`,
  );
}

/**
 * Says at the worker's start how personal data rests: sealed under which key, or in clear; how many bodies,
 * excerpts and ordering lane keys a rotation left under keys no longer listed (unreadable until their key is listed
 * again; a lane's key is rebuilt by its next webhook), and, with keys, how many still rest in clear (written before the
 * keys, `keys reseal` seals them); and whether the subject index uses the public development key. One line each; the
 * counts, which read PostgreSQL, last.
 */
export async function reportDataAtRest(knex: Knex, config: Config, logger: Logger): Promise<void> {
  const atRest = dataAtRest(config);
  const [encryptWith] = atRest.keys;
  if (encryptWith)
    logger.info(
      { keyId: encryptWith.id },
      `webhook bodies and response excerpts are stored encrypted (AES-256-GCM) with key ${encryptWith.id}`,
    );
  else
    logger.warn(
      'PAYLOAD_ENCRYPTION_KEYS is not set: webhook bodies and response excerpts are stored in clear in PostgreSQL',
    );
  await indexKeysOf(knex, atRest).then(
    ({ writeWith }) => {
      if (writeWith.id === DEVELOPMENT_KEY_ID)
        logger.warn('SUBJECT_INDEX_KEYS is not set: the erasure index is keyed with the public development key');
    },
    (error: unknown) =>
      logger.error(
        { err: error },
        error instanceof SubjectIndexKeyError
          ? `${error.message}: webhooks cannot be indexed, so they are not delivered`
          : 'could not read the subject index keys',
      ),
  );
  // A count that fails (PostgreSQL not up yet) must not stop the worker: the line is then missing, not wrong.
  const counts = await countUnlistedOrClear(
    knex,
    atRest.keys.map(({ id }) => id),
    encryptWith !== undefined,
  ).catch((error: unknown) => {
    logger.warn({ err: error }, 'could not count the bodies sealed under keys no longer listed');
    return undefined;
  });
  if (!counts) return;
  const listed = new Set(atRest.keys.map(({ id }) => id));
  const isUnlisted = (c: RestingTexts) => c.storedKeyId !== null && !listed.has(storedKeyForm(c.storedKeyId).keyId);
  const { laneKeys: _laneKeys, signingSecrets: _signingSecrets, ...unlisted } = restCount(counts, isUnlisted);
  if (unlisted.bodies + unlisted.excerpts > 0) {
    logger.warn(
      unlisted,
      `${unlisted.bodies} bodies and ${unlisted.excerpts} response excerpts are sealed under key ids ` +
        `PAYLOAD_ENCRYPTION_KEYS no longer lists (${unlisted.keyIds.join(', ')}): they cannot be read until that ` +
        `key is listed again`,
    );
  }
  const clear = restCount(counts, (c) => c.storedKeyId === null);
  if (encryptWith && clear.bodies + clear.excerpts > 0) {
    const { bodies, excerpts } = clear;
    logger.warn(
      { bodies, excerpts },
      `${bodies} bodies and ${excerpts} response excerpts are stored in clear although PAYLOAD_ENCRYPTION_KEYS ` +
        `is set: partner-service keys reseal seals them`,
    );
  }
  reportLaneKeys(
    logger,
    counts.filter((c) => c.kind === 'lane_key' && isUnlisted(c)),
    encryptWith ? clear.laneKeys : 0,
  );
  reportSigningSecrets(
    logger,
    counts.filter((c) => c.kind === 'signing_secret' && isUnlisted(c)),
    encryptWith ? clear.signingSecrets : 0,
  );
}

/** The partner's signing secrets under unlisted keys (they do not sign), and those in clear in a keyed deployment. */
function reportSigningSecrets(logger: Logger, unlisted: readonly RestingTexts[], inClear: number): void {
  if (unlisted.length) {
    const named = namedCounts(unlisted);
    logger.warn(
      { named },
      `signing secrets rest under key ids PAYLOAD_ENCRYPTION_KEYS no longer lists (${named.join(', ')}): ` +
        `deliveries are not signed with them until that key is listed again`,
    );
  }
  if (inClear > 0) {
    logger.warn(
      { signingSecrets: inClear },
      `${inClear} signing secrets are stored in clear although PAYLOAD_ENCRYPTION_KEYS is set: ` +
        `partner-service keys reseal seals them`,
    );
  }
}

/**
 * Ordering lanes' keys under unlisted keys, by name, and those in clear in a keyed deployment: neither stops delivery.
 */
function reportLaneKeys(logger: Logger, unlisted: readonly RestingTexts[], inClear: number): void {
  if (unlisted.length) {
    const named = namedCounts(unlisted);
    logger.warn(
      { laneKeys: unlisted.reduce((total, c) => total + c.count, 0), named },
      `ordering lane keys rest under key ids PAYLOAD_ENCRYPTION_KEYS no longer lists (${named.join(', ')}): ` +
        `the next webhook of each such key rebuilds its lane's key and is delivered; list the key again and run ` +
        `partner-service keys reseal to reseal them at once`,
    );
  }
  if (inClear > 0) {
    logger.warn(
      { laneKeys: inClear },
      `${inClear} ordering lane keys are stored in clear although PAYLOAD_ENCRYPTION_KEYS is set: ` +
        `partner-service keys reseal seals them`,
    );
  }
}

/**
 * The texts resting under key ids not in `listed`, and in clear when `clear`: the key ids first (a few index
 * probes), then a count of those rows only, so a deployment's millions under a listed key cost nothing.
 */
async function countUnlistedOrClear(knex: Knex, listed: readonly string[], clear: boolean): Promise<RestingTexts[]> {
  const unlisted = (await restingKeyIds(knex)).filter(
    (found) => !listed.includes(storedKeyForm(found.storedKeyId).keyId),
  );
  if (unlisted.length === 0 && !clear) return [];
  return countRestingUnder(knex, [...new Set(unlisted.map((found) => found.storedKeyId))], clear);
}
