import { databaseErrorMessage, isDatabaseError } from './database-error';

/**
 * One readable line for any thrown value. Some errors carry no message of their own (Node's AggregateError
 * for a refused connection to every address of a host, errors with only a `code`): this never prints an
 * empty reason or "undefined". A PostgreSQL error never quotes the value it refused (lib/database-error.ts).
 */
export function describeError(error: unknown): string {
  if (error === undefined || error === null) return `${error} value thrown`;
  if (isDatabaseError(error)) return databaseErrorMessage(error);
  if (!(error instanceof Error)) return String(error);
  if (error.message) return error.message;
  const inner = (error as { errors?: unknown[] }).errors;
  if (Array.isArray(inner) && inner.length) return [...new Set(inner.map(describeError))].join('; ');
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${error.name} (${code})` : error.name || 'unknown error';
}

/**
 * JSON.parse's reason without the copy of the input V8 puts in it (`Unexpected token 'x', "…" is not valid
 * JSON`): the input may be a candidate's or a user's data, and the reason goes to stderr and to logs.
 */
export function describeJsonSyntaxError(error: unknown): string {
  return describeError(error).replace(/, (\.\.\.)?".*"(\.\.\.)? is not valid JSON$/s, '');
}
