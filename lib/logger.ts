import pino, { type DestinationStream, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';
import { DATABASE_VALUE_FIELDS, withoutRefusedValues } from './database-error';

export type { Logger };

/** Paths that may carry secrets; pino replaces their values before anything is written. */
const REDACTED_PATHS = [
  'authorization',
  'token',
  'appKey',
  'app_key',
  'password',
  '*.authorization',
  '*.token',
  '*.appKey',
  '*.app_key',
  '*.password',
  'headers.authorization',
  'headers["x-app-key"]',
  'req.headers.authorization',
  'req.headers["x-app-key"]',
  'config.PARTNER_ACCESS_TOKEN',
  'config.SCIM_BEARER_TOKEN',
  'config.INTERNAL_API_TOKEN',
  'config.CODEC_AUTH_TOKEN',
  'config.PAYLOAD_ENCRYPTION_KEYS',
  'config.SUBJECT_INDEX_KEY',
  'config.SUBJECT_INDEX_KEYS',
  'config.DATABASE_URL',
];

export type LogStream = 'stdout' | 'stderr';

/**
 * pino's error serializer, minus what may quote a candidate's data: a PostgreSQL error's row and statement
 * fields, and the value a data exception refused (lib/database-error.ts). Used for `err` and for `error`,
 * the key under which the Temporal SDK logs an activity's or a workflow's failure.
 */
export function serializeLoggedError(value: unknown): unknown {
  const serialized: unknown = pino.stdSerializers.err(value as Error);
  if (serialized === value || typeof serialized !== 'object' || serialized === null) return value;
  return withoutDatabaseValues(serialized as Record<string, unknown>, value);
}

function withoutDatabaseValues(serialized: Record<string, unknown>, original: unknown): Record<string, unknown> {
  for (const field of DATABASE_VALUE_FIELDS) delete serialized[field];
  for (const key of ['message', 'stack']) {
    const text = serialized[key];
    if (typeof text === 'string') serialized[key] = withoutRefusedValues(text, original);
  }
  for (const nested of Object.values(serialized)) {
    for (const item of Array.isArray(nested) ? nested : [nested]) {
      if (typeof item === 'object' && item !== null && 'message' in item)
        withoutDatabaseValues(item as Record<string, unknown>, original);
    }
  }
  return serialized;
}

/** The logger's options: its level, the secrets it redacts and the errors it serializes without values. */
export function loggerOptions(level: string): pino.LoggerOptions {
  return {
    name: 'partner-service',
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { err: serializeLoggedError, error: serializeLoggedError },
  };
}

/**
 * The project's one logger factory, secrets redacted. Services log to stdout; one-shot CLI commands log to
 * stderr so that their stdout carries only their result. In a terminal the lines are readable text; anywhere
 * else (files, pipes, log collectors) they stay JSON.
 */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', stream: LogStream = 'stdout'): Logger {
  const fd = stream === 'stdout' ? 1 : 2;
  const tty = (stream === 'stdout' ? process.stdout : process.stderr).isTTY === true;
  const destination: DestinationStream = tty
    ? pinoPretty({ destination: fd, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name' })
    : pino.destination({ fd, sync: true });
  return pino(loggerOptions(level), destination);
}
