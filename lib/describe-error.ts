/**
 * One readable line for any thrown value. Some errors carry no message of their own (Node's AggregateError
 * for a refused connection to every address of a host, errors with only a `code`): this never prints an
 * empty reason or "undefined".
 */
export function describeError(error: unknown): string {
  if (error === undefined || error === null) return `${error} value thrown`;
  if (!(error instanceof Error)) return String(error);
  if (error.message) return error.message;
  const inner = (error as { errors?: unknown[] }).errors;
  if (Array.isArray(inner) && inner.length) return [...new Set(inner.map(describeError))].join('; ');
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${error.name} (${code})` : error.name || 'unknown error';
}
