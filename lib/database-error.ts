// What a PostgreSQL error may say in a log line, on stderr or in a workflow failure. pg's DatabaseError carries
// the row it refused in `detail` ("Failing row contains (...)", "Key (email)=(...) already exists"), and a data
// exception (SQLSTATE class 22) quotes the refused value at the end of its message. Those values can be a
// candidate's personal data: they are left out, and the SQLSTATE, constraint and column names stay.

/** The fields of pg's DatabaseError and of knex's errors that quote values, a statement or its parameters. */
export const DATABASE_VALUE_FIELDS = [
  'detail',
  'where',
  'hint',
  'internalQuery',
  'parameters',
  'bindings',
  'sql',
] as const;

export interface DatabaseErrorLike {
  readonly message: string;
  readonly code: string;
  readonly severity: string;
}

/** An error that PostgreSQL itself answered with (pg's DatabaseError: a severity and a five-character SQLSTATE). */
export function isDatabaseError(error: unknown): error is DatabaseErrorLike {
  const e = error as Partial<Record<'message' | 'code' | 'severity', unknown>> | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.message === 'string' &&
    typeof e.severity === 'string' &&
    typeof e.code === 'string' &&
    /^[0-9A-Z]{5}$/.test(e.code)
  );
}

/** What stands for a refused value in a message. */
export const VALUE_PLACEHOLDER = '"[value]"';

/** The value a data exception quotes at the end of its message, quotes included; undefined for other errors. */
export function quotedValueOf(error: DatabaseErrorLike): string | undefined {
  return error.code.startsWith('22') ? /: (".*")$/s.exec(error.message)?.[1] : undefined;
}

/**
 * The error's message with a data exception's quoted value replaced: `invalid input syntax for type uuid: "[value]"`.
 */
export function databaseErrorMessage(error: DatabaseErrorLike): string {
  const value = quotedValueOf(error);
  return value === undefined ? error.message : error.message.slice(0, -value.length) + VALUE_PLACEHOLDER;
}

/** Every PostgreSQL error in an error's causes and aggregated errors, the error itself included. */
export function databaseErrorsWithin(error: unknown, depth = 0): DatabaseErrorLike[] {
  if (typeof error !== 'object' || error === null || depth > 5) return [];
  const { cause, errors } = error as { cause?: unknown; errors?: unknown };
  const inner = [cause, ...(Array.isArray(errors) ? errors : [])].flatMap((e) => databaseErrorsWithin(e, depth + 1));
  return isDatabaseError(error) ? [error, ...inner] : inner;
}

/** `text` (a message, a stack) with every value refused by a PostgreSQL error within `error` replaced. */
export function withoutRefusedValues(text: string, error: unknown): string {
  const quoted = databaseErrorsWithin(error).flatMap((e) => quotedValueOf(e) ?? []);
  return quoted.reduce((out, value) => out.split(value).join(VALUE_PLACEHOLDER), text);
}
