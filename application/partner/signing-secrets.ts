import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { dataAtRest, sealText } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import { NotFoundError, SigningSecretConflictError } from '../../lib/errors';
import { isCanonicalUuid } from '../../lib/validation';
import { refuseClearWriteIfKeyed } from '../../store/personal-data/at-rest-settings';
import {
  CONFIGURATION_SECRET_ID,
  endSigningSecret,
  insertSigningSecret,
  liveSigningSecrets,
  signingSecretBinding,
  type SigningSecretSource,
} from '../../store/partner/signing-secrets';
import { auditedChange, type OperatorContext } from '../access/audit';

// The partner's signing secrets through the partner API (docs/partners.md, "Signing secrets"): made, listed and
// ended early. A secret is shown once, when it is made; it rests as webhook bodies do (sealed under
// PAYLOAD_ENCRYPTION_KEYS, or in clear without them) and the worker signs with every live one.

/** Random bytes in a new secret: Standard Webhooks allows 24 to 64. */
const SECRET_BYTES = 32;

/** A live secret as the partner API shows it: never the secret. */
export interface SigningSecretSummary {
  readonly id: string;
  /** Null for a secret of the configuration, whose making the service never saw. */
  readonly created_at: Date | null;
  /** When it stops signing; null while no newer secret replaces it. */
  readonly expires_at: Date | null;
  /** The last POST it signed, to the minute; null for the configuration's secrets, which are not tracked. */
  readonly last_used_at: Date | null;
  readonly source: SigningSecretSource;
}

/** Every secret that signs now, oldest first (those of PARTNER_SIGNING_SECRETS first), without the secrets. */
export async function listSigningSecretSummaries(knex: Knex, config: Config): Promise<SigningSecretSummary[]> {
  return (await liveSigningSecrets(knex, config)).map((secret) => ({
    id: secret.id,
    created_at: secret.createdAt,
    expires_at: secret.expiresAt,
    last_used_at: secret.lastUsedAt,
    source: secret.source,
  }));
}

/** A new secret, with the one time it is shown. */
export interface CreatedSigningSecret {
  readonly id: string;
  readonly secret: string;
  readonly created_at: Date;
  readonly expires_at: null;
}

/**
 * Makes a `whsec_` secret that signs from the worker's next read of the secrets on, and gives every live secret an
 * end PARTNER_SIGNING_SECRET_OVERLAP_HOURS away. Audited as `signing_secret.create`, with its id and never the secret.
 */
export async function createSigningSecret(knex: Knex, config: Config, who: OperatorContext) {
  const atRest = dataAtRest(config);
  // A process without keys in a keyed deployment writes no secret in clear (503), as it writes no body.
  await refuseClearWriteIfKeyed(knex, atRest);
  const id = randomUUID();
  const secret = `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
  const createdAt = await auditedChange(knex, who, { action: 'signing_secret.create', target: id }, (trx) =>
    insertSigningSecret(
      trx,
      { id, stored: sealText(atRest, secret, signingSecretBinding(id)), createdBy: who.actor },
      config.PARTNER_SIGNING_SECRET_OVERLAP_HOURS,
    ),
  );
  return { id, secret, created_at: createdAt, expires_at: null } satisfies CreatedSigningSecret;
}

/**
 * Ends a live API secret now. 404 for an id no live secret has; 409 for the current secret (no newer one replaces
 * it) and for a secret of PARTNER_SIGNING_SECRETS. Audited as `signing_secret.delete`, refusals too.
 */
export async function deleteSigningSecret(knex: Knex, config: Config, who: OperatorContext, id: string) {
  const configured = CONFIGURATION_SECRET_ID.exec(id);
  // An id that no secret can have is not audited: its text is the caller's, not a secret's.
  if (!isCanonicalUuid(id) && !configured) throw new NotFoundError('signing secret', id);
  await auditedChange(knex, who, { action: 'signing_secret.delete', target: id }, async (trx) => {
    if (configured) {
      const live = await liveSigningSecrets(trx, config);
      if (!live.some((secret) => secret.id === id)) throw new NotFoundError('signing secret', id);
      throw new SigningSecretConflictError('configuration_secret');
    }
    const ended = await endSigningSecret(trx, id);
    if (ended === 'unknown') throw new NotFoundError('signing secret', id);
    if (ended === 'current') throw new SigningSecretConflictError('current_secret');
  });
}
