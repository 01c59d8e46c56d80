import type { Knex } from 'knex';
import { SHARED_TOKEN_ACTOR } from '../../lib/actor';
import { apiTokenId } from '../../lib/api-token';
import { verifyAppKey } from '../../lib/app-keys';
import { bearerTokenChecker, presentedBearerToken } from '../../lib/bearer-token';
import { describeError } from '../../lib/describe-error';
import type { Logger } from '../../lib/logger';
import { INTERNAL_API_SCOPES, type TokenScope } from '../../lib/vocabulary';
import { loadApiTokens, recordApiTokenUse, type StoredApiToken } from '../../store/access/api-tokens';

/** How often an api process reloads the tokens (and writes their last use): a revocation reaches it this fast. */
export const TOKEN_REFRESH_MS = 1_000;

/**
 * The bound on a revocation: past it, a process whose reloads fail refuses named tokens (503) rather than trust
 * what it read before. The shared INTERNAL_API_TOKEN comes from the configuration and is not affected.
 */
export const REVOCATION_BOUND_MS = 5_000;

/** Logged once when an api process starts with INTERNAL_API_TOKEN set (never the token itself). */
export const SHARED_TOKEN_WARNING =
  'INTERNAL_API_TOKEN is set: it is a shared token with every scope of the internal API (ingest, read, ' +
  'operate, erase), and the audit trail names its holder only as INTERNAL_API_TOKEN; ' +
  'give each caller a named token with only the scopes it needs (partner-service tokens create), then unset it ' +
  '(docs/access.md, "Tokens and scopes")';

export type TokenCheck =
  | { readonly kind: 'missing' }
  /** `reason`: unknown or wrong (`invalid_token`), `revoked` or `expired`, for the auth-failure count. */
  | { readonly kind: 'invalid'; readonly detail: string; readonly reason: 'invalid_token' | 'revoked' | 'expired' }
  /** A named token, and the tokens could not be reloaded within REVOCATION_BOUND_MS. */
  | { readonly kind: 'unavailable'; readonly detail: string }
  | { readonly kind: 'valid'; readonly actor: string; readonly scopes: readonly TokenScope[] };

const INVALID: TokenCheck = { kind: 'invalid', detail: 'Invalid token.', reason: 'invalid_token' };

export interface TokenChecker {
  /** Checks an Authorization header in memory: no database round trip. */
  check(authorization: string): TokenCheck;
  /** The first load; later ones run every TOKEN_REFRESH_MS until close(). */
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface TokenCheckerOptions {
  readonly knex: Knex;
  readonly logger: Logger;
  /**
   * INTERNAL_API_TOKEN: a token with every scope of the internal API (not `decode`), compared in constant time like the
   * named ones.
   */
  readonly sharedToken?: string;
  readonly refreshMs?: number;
  readonly boundMs?: number;
  readonly now?: () => number;
}

/**
 * The named tokens of api_tokens, held in memory and reloaded every second, with the shared token beside them.
 * A presented named token carries its row id, so one salted hash is compared (in constant time); its last use
 * is noted in memory and written with the next reload, never on the request's path.
 */
export function createTokenChecker({
  knex,
  logger,
  sharedToken,
  refreshMs = TOKEN_REFRESH_MS,
  boundMs = REVOCATION_BOUND_MS,
  now = Date.now,
}: TokenCheckerOptions): TokenChecker {
  const shared = sharedToken ? bearerTokenChecker(sharedToken) : undefined;
  let tokens = new Map<string, StoredApiToken>();
  let loadedAt = -Infinity;
  let uses = new Map<string, Date>();
  let timer: NodeJS.Timeout | undefined;
  let reloading: Promise<void> | undefined;
  let failing = false;

  /** The last uses noted since the previous write; ones that could not be written wait for the next. */
  async function writeUses(): Promise<void> {
    const written = uses;
    uses = new Map();
    await recordApiTokenUse(knex, written).catch((error: unknown) => {
      for (const [id, at] of written) if (!uses.has(id)) uses.set(id, at);
      logger.debug(
        { reason: describeError(error) },
        "the internal API tokens' last use was not written; the next reload tries again",
      );
    });
  }

  // The list first: the revocation bound depends on it alone, never on writing the last uses.
  async function reload(): Promise<void> {
    const started = now();
    try {
      tokens = new Map((await loadApiTokens(knex)).map((token) => [token.id, token]));
      loadedAt = started;
      if (failing) logger.info('the internal API tokens are read from PostgreSQL again');
      failing = false;
    } catch (error) {
      if (!failing)
        logger.warn(
          { reason: describeError(error) },
          `the internal API tokens cannot be reloaded from PostgreSQL: named tokens are refused after ` +
            `${boundMs / 1000} s without a reload`,
        );
      failing = true;
      return;
    }
    await writeUses();
  }
  const reloadOnce = () => (reloading ??= reload().finally(() => (reloading = undefined)));

  function checkNamed(id: string, presented: string): TokenCheck {
    if (now() - loadedAt > boundMs)
      return {
        kind: 'unavailable',
        detail:
          `Named tokens cannot be checked: the token list has not been read from PostgreSQL for more than ` +
          `${boundMs / 1000} s. Retry later.`,
      };
    const token = tokens.get(id);
    if (!token || !verifyAppKey(presented, token.hashed)) return INVALID;
    if (token.revokedAt) return { kind: 'invalid', detail: 'Invalid token: it has been revoked.', reason: 'revoked' };
    if (token.expiresAt && token.expiresAt.getTime() <= now())
      return {
        kind: 'invalid',
        detail: `Invalid token: it expired at ${token.expiresAt.toISOString()}.`,
        reason: 'expired',
      };
    uses.set(token.id, new Date(now()));
    return { kind: 'valid', actor: token.name, scopes: token.scopes };
  }

  return {
    check(authorization) {
      const presented = presentedBearerToken(authorization);
      if (presented === undefined) return { kind: 'missing' };
      const id = apiTokenId(presented);
      if (id) return checkNamed(id, presented);
      if (shared?.(authorization) === 'valid')
        return { kind: 'valid', actor: SHARED_TOKEN_ACTOR, scopes: INTERNAL_API_SCOPES };
      return INVALID;
    },
    async start() {
      if (sharedToken && !timer) logger.warn(SHARED_TOKEN_WARNING);
      await reloadOnce();
      timer ??= setInterval(() => void reloadOnce(), refreshMs);
      timer.unref();
    },
    async close() {
      clearInterval(timer);
      timer = undefined;
      await reloading;
      await writeUses();
    },
  };
}
