import pino, { type DestinationStream, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';

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
  'config.DATABASE_URL',
];

export type LogStream = 'stdout' | 'stderr';

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
  return pino({ name: 'partner-service', level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
}
