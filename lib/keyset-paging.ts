import { z } from 'zod';
import { isStorableText, unstorableTextIssue } from './validation';

// What every keyset-paged list of the internal API and the CLI shares (the delivery log, the audit trail):
// its time, exact-text and page-size fields in zod, and its opaque cursor, a row's position encoded.

/** An ISO 8601 date-time with a time zone, as a query or a flag gives it. */
export const isoDateTime = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z' })
  .transform((s) => new Date(s));

/** Text to match exactly: not empty, and no NUL character (PostgreSQL text cannot hold one). */
export const exactText = z
  .string()
  .min(1, { message: 'must not be empty' })
  .refine(isStorableText, unstorableTextIssue);

/** A query string's `true` or `false` (absent: false). */
export const queryFlag = z
  .enum(['true', 'false'], { message: 'must be true or false' })
  .default('false')
  .transform((value) => value === 'true');

/** A whole number from 1 to `max`, from a query string or a JSON body. */
export const wholeCount = (max: number) =>
  z.coerce
    .number({ message: 'must be a whole number' })
    .int({ message: 'must be a whole number' })
    .min(1, { message: 'must be at least 1' })
    .max(max, { message: `must be at most ${max}` });

/** The cursor of a page's last row: opaque to callers, it only carries the row's position (its key values). */
export function encodeKeysetCursor(position: readonly string[]): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** The position a cursor made by encodeKeysetCursor carries, checked against `shape`; undefined for anything else. */
export function decodeKeysetCursor<T extends z.ZodTuple>(cursor: string, shape: T): z.output<T> | undefined {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  const parsed = shape.safeParse(decoded);
  return parsed.success ? parsed.data : undefined;
}

/** What an API or CLI says of a cursor it did not give out. */
export const NOT_A_CURSOR = { path: 'cursor', message: 'is not a cursor this API gave out' } as const;
