import { z } from 'zod';
import { loadTemporalConnection, type TemporalConnectionConfig } from './temporal-connection-config';
import { ConfigError } from './errors';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** A whole number from `min` to `max`, as the environment gives it (text). */
const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { message: 'must be a whole number' })
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, { message: `must be at least ${min}` })
        .max(max, { message: `must be at most ${max}` }),
    );

const positiveInt = (max = Number.MAX_SAFE_INTEGER) => wholeNumber(1, max);

/** A whole number from 0 (which means "none") to `max`. */
const wholeOrZero = (max: number) => wholeNumber(0, max);

/** The floor under AUDIT_RETENTION_DAYS; the database's purge function enforces the same (020_verifiable_audit). */
export const MIN_AUDIT_RETENTION_DAYS = 30;

const postgresUrl = z
  .string()
  .regex(/^postgres(ql)?:\/\/\S+$/, { message: 'must be a postgres:// or postgresql:// URL' });

const httpUrl = z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' });

const secret = z
  .string()
  .min(16, { message: 'must be at least 16 characters long' })
  .regex(/^\S+$/, { message: 'must not contain spaces' });

/** The task queue of the webhook workflows when TEMPORAL_TASK_QUEUE is unset. */
export const DEFAULT_TASK_QUEUE = 'partner-webhooks';
/** Per-entity ordering is on unless WEBHOOK_ORDERING=off (docs/partners.md "Order per entity"). */
export const WEBHOOK_ORDERING_DEFAULT = 'entity';

/** Standard Webhooks secrets: `whsec_` and base64 of 24 to 64 random bytes, space-separated during a rotation. */
const signingSecrets = z
  .string()
  .transform((s) => s.split(/\s+/).filter(Boolean))
  .pipe(
    z.array(
      z
        .string()
        .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, { message: 'must be whsec_ values (base64), separated by spaces' })
        .transform((secret) => Buffer.from(secret.slice('whsec_'.length), 'base64'))
        .refine((key) => key.length >= 24 && key.length <= 64, {
          message: 'must each hold 24 to 64 bytes (base64 after whsec_)',
        }),
    ),
  );

/** One key of PAYLOAD_ENCRYPTION_KEYS: its id is stored beside each payload it encrypts, never the key. */
export interface PayloadEncryptionKey {
  readonly id: string;
  readonly key: Buffer;
}

/**
 * `keyId:base64key` pairs, space-separated, newest first; each key `minBytes` to `maxBytes` long. The first
 * writes, every listed key reads.
 */
const keyList = (minBytes: number, maxBytes: number, sizeMessage: string) =>
  z
    .string()
    .transform((s) => s.split(/\s+/).filter(Boolean))
    .pipe(
      z
        .array(
          z
            .string()
            .regex(/^[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]+={0,2}$/, {
              message: 'must be keyId:base64key pairs separated by spaces (ids of A-Z a-z 0-9 . _ -)',
            })
            .transform((pair): PayloadEncryptionKey => {
              const colon = pair.indexOf(':');
              return { id: pair.slice(0, colon), key: Buffer.from(pair.slice(colon + 1), 'base64') };
            })
            .refine(({ key }) => key.length >= minBytes && key.length <= maxBytes, { message: sizeMessage }),
        )
        .refine((keys) => new Set(keys.map((k) => k.id)).size === keys.length, { message: 'must not repeat a key id' }),
    );

/** AES-256 keys: the first encrypts, all decrypt. */
const payloadEncryptionKeys = keyList(
  32,
  32,
  'must each hold a 256-bit key: 32 bytes in base64 (openssl rand -base64 32)',
);

/** Browser origins (scheme, host, optional port), separated by commas or spaces. */
const corsOrigins = z
  .string()
  .transform((s) => s.split(/[\s,]+/).filter(Boolean))
  .pipe(
    z.array(
      z
        .string()
        .refine(
          (origin) =>
            URL.canParse(origin) && /^https?:$/.test(new URL(origin).protocol) && new URL(origin).origin === origin,
          {
            message:
              'must be origins such as https://temporal.example.com (scheme, host, optional port; no path), ' +
              'separated by commas or spaces',
          },
        ),
    ),
  );

/**
 * Every environment variable the service reads, except Temporal's connection (TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TLS, API key, profiles): Temporal's own environment configuration reads those, see
 * lib/temporal-connection-config.ts. docs/configuration.md's table mirrors both.
 */
const envSchema = z.object({
  PORT: positiveInt(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: postgresUrl.optional(),
  /** Longest statement of the service's own sessions, in ms (0: none); bounds how long one holds the feed back. */
  DATABASE_STATEMENT_TIMEOUT_MS: wholeOrZero(86_400_000).default(300_000),
  /** Longest a transaction of the service's own sessions may stay idle, in ms (0: none). */
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: wholeOrZero(86_400_000).default(60_000),
  DATA_DIR: z.string().min(1).default('.data'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  PARTNER_ENDPOINT: httpUrl.optional(),
  PARTNER_ACCESS_TOKEN: z.string().min(1).optional(),
  PARTNER_TIMEOUT_MS: positiveInt(600_000).default(30_000),
  PARTNER_SIGNING_SECRETS: signingSecrets.optional(),
  /**
   * Hours a signing secret keeps signing after a newer one is made through the partner API, beside it
   * (docs/partners.md, "Signing secrets").
   */
  PARTNER_SIGNING_SECRET_OVERLAP_HOURS: positiveInt(24 * 365).default(24),
  PARTNER_MAX_CONCURRENCY: positiveInt(1000).default(10),
  PARTNER_MAX_PER_SECOND: positiveInt(100_000).default(50),
  /** Failing answers in a row, across every worker, that trip the breaker (docs/partner-protection.md). */
  PARTNER_BREAKER_FAILURES: positiveInt(10_000).default(10),
  /** How often a tripped breaker sends its one probe. */
  PARTNER_PROBE_INTERVAL_MS: positiveInt(3_600_000).default(30_000),
  /** The longest one delivery is held (pause, breaker or Retry-After); then it goes on with its schedule. */
  PARTNER_HOLD_CEILING_MS: positiveInt(30 * 86_400_000).default(86_400_000),
  /**
   * Webhook starts one api process has in flight at once; past it POST /internal/v1/webhooks answers 503 `overloaded`
   * (docs/ingestion.md).
   */
  INGEST_MAX_STARTS_IN_FLIGHT: positiveInt(100_000).default(128),
  /** Requests one partner app may make to /partner/v1 per minute, per api process; past it 429 (docs/partners.md). */
  PARTNER_API_REQUESTS_PER_MINUTE: positiveInt(1_000_000).default(600),
  /** The API's address as partners' browsers reach it, for `portal link`'s links; default http://localhost:PORT. */
  PORTAL_BASE_URL: httpUrl.optional(),
  /** Seconds a stored webhook may go without a run before the worker looks it up in Temporal (docs/ingestion.md). */
  WEBHOOK_START_DOUBT_SECONDS: positiveInt(86_400)
    .pipe(z.number().min(10, { message: 'must be at least 10 (a start call may take 5 s)' }))
    .default(60),
  /** `entity`: each ordering key's webhooks reach the partner in the order they were accepted (docs/partners.md). */
  WEBHOOK_ORDERING: z.enum(['entity', 'off'], { message: 'must be entity or off' }).default(WEBHOOK_ORDERING_DEFAULT),
  /**
   * An ordered key whose head fails finally: `skip` records the gap and goes on; `block` waits for an operator's skip
   * or retry.
   */
  WEBHOOK_ORDERING_ON_FAILURE: z.enum(['skip', 'block'], { message: 'must be skip or block' }).default('skip'),
  WORKER_HTTP_PORT: positiveInt(65535).default(3001),
  /** Unset: PARTNER_MAX_CONCURRENCY + 40 (worker/webhook-worker.ts `workflowTaskSlots`). */
  WORKER_WORKFLOW_TASK_SLOTS: positiveInt(10_000).optional(),
  WORKER_RECORD_ACTIVITY_SLOTS: positiveInt(10_000).default(10),
  /** Redeliveries a partner recovery writes and starts per batch (application/webhooks/recovery-batches.ts). */
  PARTNER_RECOVERY_BATCH_SIZE: positiveInt(5_000).default(500),
  WORKER_MAX_CACHED_WORKFLOWS: positiveInt(1_000_000).optional(),
  /** Set: the workers poll as this build of WORKER_DEPLOYMENT_NAME, each run pinned to its build (docs/webhooks.md). */
  WORKER_BUILD_ID: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, {
      message: 'must be 1 to 128 of A-Z a-z 0-9 . _ - (an image tag or a git SHA)',
    })
    .optional(),
  WORKER_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/, { message: 'must be 1 to 128 of A-Z a-z 0-9 _ -' })
    .default('partner-webhooks'),
  API_VERSIONS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean),
    )
    .pipe(
      z
        .array(
          z.string().regex(/^[A-Za-z0-9._-]+$/, { message: 'must be comma-separated path segments such as v1,v2' }),
        )
        .min(1, { message: 'must name at least one version' }),
    )
    .default(['v1']),
  TRUST_PROXY: booleanFlag.default(false),
  SCIM_BEARER_TOKEN: secret.optional(),
  INTERNAL_API_TOKEN: secret.optional(),
  PAYLOAD_ENCRYPTION_KEYS: payloadEncryptionKeys.optional(),
  /**
   * The subject index's HMAC keys (lib/subject-index.ts), newest first: the first indexes, an erasure searches
   * under all. Unset: only `partner-service start`'s development mode indexes, with the public development key.
   */
  SUBJECT_INDEX_KEYS: keyList(32, 64, 'must each hold 32 to 64 bytes in base64 (openssl rand -base64 32)').optional(),
  /** One index key: the same as SUBJECT_INDEX_KEYS `default:<key>`. */
  SUBJECT_INDEX_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, { message: 'must be base64 (openssl rand -base64 32)' })
    .transform((value) => Buffer.from(value, 'base64'))
    .refine((key) => key.length >= 32 && key.length <= 64, {
      message: 'must hold 32 to 64 bytes in base64 (openssl rand -base64 32)',
    })
    .optional(),
  /** Days after a webhook finishes that its body and response excerpts are kept (docs/personal-data.md). */
  WEBHOOK_PAYLOAD_RETENTION_DAYS: positiveInt(36_500).default(30),
  /** Days after a webhook finishes that its row and attempts stay in the delivery log; at least the payload's. */
  WEBHOOK_LOG_RETENTION_DAYS: positiveInt(36_500).default(90),
  /** Days an audit row (an operator's change) is kept; the retention purge deletes older ones (docs/access.md). */
  AUDIT_RETENTION_DAYS: positiveInt(36_500)
    .refine((days) => days >= MIN_AUDIT_RETENTION_DAYS, {
      message:
        `must be at least ${MIN_AUDIT_RETENTION_DAYS}: the database keeps every audit row that long ` +
        `(docs/access.md)`,
    })
    .default(365),
  // URL-safe: Temporal UI is given it inside the codec endpoint's path.
  CODEC_AUTH_TOKEN: secret
    .pipe(
      z.string().regex(/^[A-Za-z0-9._~-]+$/, {
        message: 'must contain only letters, digits and . _ ~ - (it goes into a URL path)',
      }),
    )
    .optional(),
  CODEC_CORS_ORIGINS: corsOrigins.default([]),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.infer<typeof envSchema> & {
  /** How to reach Temporal: address, namespace, TLS and API key, certificates already read and checked. */
  readonly temporal: TemporalConnectionConfig;
};

/** The address the worker and client use when no Temporal is configured: Temporal's local dev server. */
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

/**
 * Reads the configuration from an environment. Empty strings count as unset, so `FOO=` in a .env file
 * falls back to the default. The error names the first bad variable and never echoes its value.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(
    Object.keys(envSchema.shape)
      .filter((key) => env[key] !== undefined && env[key] !== '')
      .map((key) => [key, env[key]]),
  );
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = String(issue.path[0]);
    throw new ConfigError(`Invalid configuration: ${variable} ${issue.message}`);
  }
  if (parsed.data.SUBJECT_INDEX_KEYS && parsed.data.SUBJECT_INDEX_KEY) {
    throw new ConfigError(
      'Invalid configuration: set SUBJECT_INDEX_KEYS or SUBJECT_INDEX_KEY, not both (SUBJECT_INDEX_KEY=K is ' +
        'SUBJECT_INDEX_KEYS=default:K)',
    );
  }
  if (parsed.data.WEBHOOK_LOG_RETENTION_DAYS < parsed.data.WEBHOOK_PAYLOAD_RETENTION_DAYS) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_LOG_RETENTION_DAYS must be at least WEBHOOK_PAYLOAD_RETENTION_DAYS (a row ' +
        'outlives its body)',
    );
  }
  return { ...parsed.data, temporal: loadTemporalConnection(env) };
}

/** Where and how to POST webhooks, read from configuration at send time so a rotated token applies to retries. */
export interface PartnerSettings {
  readonly endpoint: string;
  readonly token: string;
  readonly timeoutMs: number;
  /** Keys of the `webhook-signature` header; none: requests are not signed. */
  readonly signingSecrets: readonly Buffer[];
}

/** The partner settings from configuration, or why a POST cannot be made. */
export function partnerSettings(config: Config): PartnerSettings | { missing: string } {
  if (!config.PARTNER_ENDPOINT) return { missing: 'PARTNER_ENDPOINT' };
  if (!config.PARTNER_ACCESS_TOKEN) return { missing: 'PARTNER_ACCESS_TOKEN' };
  return {
    endpoint: config.PARTNER_ENDPOINT,
    token: config.PARTNER_ACCESS_TOKEN,
    timeoutMs: config.PARTNER_TIMEOUT_MS,
    signingSecrets: config.PARTNER_SIGNING_SECRETS ?? [],
  };
}
