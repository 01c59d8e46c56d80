import { randomBytes, randomUUID } from 'node:crypto';
import { hashAppKey, type HashedAppKey } from './app-keys';

// A named token of the internal API: `pis_<id>_<secret>`. The id (the row's uuid, without dashes) lets an api
// process find the one stored hash to compare against, in memory, without trying every token; the secret is
// 256 random bits. Only a salted SHA-256 of the whole token is stored (lib/app-keys, as for app keys).

const TOKEN = /^pis_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

export interface IssuedApiToken {
  readonly id: string;
  /** Shown once to whoever created it; never stored, logged or shown again. */
  readonly secret: string;
  readonly hashed: HashedAppKey;
}

/** A new token: its row id, the secret to hand out, and what is stored of it. */
export function issueApiToken(): IssuedApiToken {
  const id = randomUUID();
  const secret = `pis_${id.replaceAll('-', '')}_${randomBytes(32).toString('base64url')}`;
  return { id, secret, hashed: hashAppKey(secret) };
}

/** The row id a presented token names, or undefined when it does not have a named token's shape. */
export function apiTokenId(presented: string): string | undefined {
  const hex = TOKEN.exec(presented)?.[1];
  return hex && `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
