import type { Knex } from 'knex';
import { issueApiToken } from '../../lib/api-token';
import { TOKEN_SCOPES, type TokenScope } from '../../lib/vocabulary';
import { insertApiToken, listApiTokens, revokeApiToken } from '../../store/access/api-tokens';
import { auditedChange, type OperatorContext } from './audit';
import { InvalidRequestError } from '../../lib/errors';

// The named tokens of the internal API as an operator manages them (`partner-service tokens`): a request is
// checked before anything is written, then the token and its audit row are written in one transaction.

/** The table's CHECK on api_tokens.name (db/migrations/016_tokens_and_audit.ts). */
const TOKEN_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const DURATION = /^(\d+)([dhm])$/;
const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000 } as const;
/** The longest expiry: ten years, far inside what a timestamp holds. */
const MAX_EXPIRY_MS = 3650 * UNIT_MS.d;

export interface TokenRequest {
  readonly name: string;
  readonly scopes: readonly TokenScope[];
  readonly expiresAt: Date | null;
}

function tokenName(name: string): string {
  if (!TOKEN_NAME.test(name)) {
    throw new InvalidRequestError(
      `invalid token name ${JSON.stringify(name)}: 1 to 63 characters of a-z, 0-9, ".", "_" and "-", starting ` +
        `with a letter or a digit`,
    );
  }
  return name;
}

function tokenScopes(list: string): TokenScope[] {
  const given = list.split(',').map((scope) => scope.trim());
  const unknown = given.filter((scope) => !(TOKEN_SCOPES as readonly string[]).includes(scope));
  if (unknown.length)
    throw new InvalidRequestError(
      `unknown scope ${unknown.map((s) => JSON.stringify(s)).join(', ')}: the scopes are ${TOKEN_SCOPES.join(', ')}`,
    );
  return TOKEN_SCOPES.filter((scope) => given.includes(scope));
}

/** `90d`, `12h` or `30m` from `now`; zero, negative or anything else is refused. */
function expiryOf(duration: string, now: Date): Date {
  const match = DURATION.exec(duration);
  if (!match) {
    const negative = /^-\d+[dhm]$/.test(duration);
    throw new InvalidRequestError(
      `--expires-in ${JSON.stringify(duration)} is ${negative ? 'negative' : 'not a duration'}: give a positive ` +
        `whole number of days, hours or minutes, such as 90d, 12h or 30m`,
    );
  }
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (ms === 0)
    throw new InvalidRequestError(
      `--expires-in ${JSON.stringify(duration)} is zero: give a positive duration, such as 90d, 12h or 30m`,
    );
  if (ms > MAX_EXPIRY_MS)
    throw new InvalidRequestError(`--expires-in ${JSON.stringify(duration)} is longer than ten years (3650d)`);
  return new Date(now.getTime() + ms);
}

/** Checks a `tokens create` request: its name, its comma-separated scopes and its optional expiry. */
export function parseTokenRequest(
  input: { name?: string; scopes?: string; expiresIn?: string },
  now = new Date(),
): TokenRequest {
  if (input.name === undefined) throw new InvalidRequestError('--name is required');
  if (input.scopes === undefined)
    throw new InvalidRequestError(
      `--scope is required: one or more of ${TOKEN_SCOPES.join(', ')}, separated by commas`,
    );
  return {
    name: tokenName(input.name),
    scopes: tokenScopes(input.scopes),
    expiresAt: input.expiresIn === undefined ? null : expiryOf(input.expiresIn, now),
  };
}

/** A created token as `tokens create` prints it: the only time its secret is shown. */
export interface CreatedToken {
  readonly name: string;
  readonly scopes: readonly TokenScope[];
  readonly expires_at: Date | null;
  readonly token: string;
}

/** Creates the token with its audit row ('token.create'); a taken name (live or revoked) writes no token. */
export async function createApiToken(knex: Knex, who: OperatorContext, request: TokenRequest): Promise<CreatedToken> {
  const issued = issueApiToken();
  const what = {
    action: 'token.create',
    target: request.name,
    parameters: { scopes: request.scopes, expires_at: request.expiresAt?.toISOString() ?? null },
  } as const;
  await auditedChange(knex, who, what, async (trx) => {
    const inserted = await insertApiToken(trx, {
      id: issued.id,
      name: request.name,
      scopes: request.scopes,
      hashed: issued.hashed,
      createdBy: who.actor,
      expiresAt: request.expiresAt,
    });
    if (!inserted)
      throw new InvalidRequestError(
        `a token named ${JSON.stringify(request.name)} exists already (live or revoked): names are never reused, ` +
          `choose another`,
      );
  });
  return { name: request.name, scopes: request.scopes, expires_at: request.expiresAt, token: issued.secret };
}

/** Revokes the live token `name` with its audit row ('token.revoke'); an unknown or revoked name changes nothing. */
export async function revokeApiTokenNamed(
  knex: Knex,
  who: OperatorContext,
  name: string,
): Promise<{ readonly name: string; readonly revoked_by: string }> {
  await auditedChange(knex, who, { action: 'token.revoke', target: name, parameters: {} }, async (trx) => {
    if (!(await revokeApiToken(trx, name, who.actor)))
      throw new InvalidRequestError(
        `no live token named ${JSON.stringify(name)}: it does not exist or is revoked already`,
      );
  });
  return { name, revoked_by: who.actor };
}

/** Every token as `tokens list` prints it: never a secret or a hash. */
export async function listTokens(knex: Knex) {
  return (await listApiTokens(knex)).map((t) => ({
    name: t.name,
    scopes: t.scopes,
    created_at: t.createdAt,
    created_by: t.createdBy,
    last_used_at: t.lastUsedAt,
    expires_at: t.expiresAt,
    revoked_at: t.revokedAt,
  }));
}
