import type { Knex } from 'knex';
import type { Config } from '../../lib/config';

// The partner's signing secrets as GET /partner/v1/endpoint lists them: ids and ages, never a secret. The signing
// secrets' own work (issue 58, "Signing secrets") fills this in with the secrets the API creates; until then the
// configuration's PARTNER_SIGNING_SECRETS are the only ones.

/** One signing secret, without its value. */
export interface SigningSecretSummary {
  /** `config-<n>` for the n-th of PARTNER_SIGNING_SECRETS; the API's own secrets have their own ids. */
  readonly id: string;
  readonly created_at: Date | null;
  readonly expires_at: Date | null;
  readonly last_used_at: Date | null;
  /** `configuration`: PARTNER_SIGNING_SECRETS, which the API cannot delete; `api`: created through the API. */
  readonly source: 'api' | 'configuration';
}

/** Every live signing secret, the configuration's first, in the order the POSTs' signatures list them. */
export async function listSigningSecretSummaries(_knex: Knex, config: Config): Promise<SigningSecretSummary[]> {
  return (config.PARTNER_SIGNING_SECRETS ?? []).map((_secret, i) => ({
    id: `config-${i + 1}`,
    created_at: null,
    expires_at: null,
    last_used_at: null,
    source: 'configuration',
  }));
}
