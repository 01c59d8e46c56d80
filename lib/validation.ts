import type { z } from 'zod';

export type PathSegment = PropertyKey;

/** Renders a JSON path the way people write it: `users[3].emails[0]`. */
export function formatJsonPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out || '(root)';
}

export interface PathError {
  readonly path: string;
  readonly message: string;
}

/** One `{path, message}` per zod issue, with unknown keys named individually. */
export function zodPathErrors(error: z.ZodError): PathError[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: formatJsonPath([...issue.path, key]), message: 'unknown field' }));
    }
    return [{ path: formatJsonPath(issue.path), message: issue.message }];
  });
}

export const formatPathError = (e: PathError): string => `${e.path}: ${e.message}`;

const UNSTORABLE_TEXT = 'text PostgreSQL cannot store: a NUL character (\\u0000) or an unpaired surrogate';

/** PostgreSQL text refuses NUL characters, and its UTF-8 cannot encode lone UTF-16 surrogates. */
export const isStorableText = (s: string): boolean => !s.includes('\0') && s.isWellFormed();

/** For a zod refinement of any text bound for SQL: the 400 names the parameter instead of PostgreSQL's 500. */
export const unstorableTextIssue = { message: UNSTORABLE_TEXT };
/** Deeper documents are refused before anything recursive (this walk, jsonb, Temporal's converter) meets them. */
export const MAX_JSON_DEPTH = 64;

/**
 * Paths of every string (object keys included) that PostgreSQL text and jsonb reject: NUL characters and
 * lone UTF-16 surrogates, which JSON allows; and of nesting deeper than MAX_JSON_DEPTH.
 */
export function unstorableTextErrors(value: unknown, path: PathSegment[] = []): PathError[] {
  if (typeof value === 'string')
    return !isStorableText(value) ? [{ path: formatJsonPath(path), message: UNSTORABLE_TEXT }] : [];
  if (value === null || typeof value !== 'object') return [];
  if (path.length >= MAX_JSON_DEPTH)
    return [{ path: formatJsonPath(path), message: `nested deeper than ${MAX_JSON_DEPTH} levels` }];
  if (Array.isArray(value)) return value.flatMap((item, i) => unstorableTextErrors(item, [...path, i]));
  return Object.entries(value).flatMap(([key, item]) =>
    !isStorableText(key)
      ? [{ path: formatJsonPath([...path, key]), message: UNSTORABLE_TEXT }]
      : unstorableTextErrors(item, [...path, key]),
  );
}

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A UUID in its canonical lower-case form, as PostgreSQL prints uuid values and as ids compare (caseExact). */
export const isCanonicalUuid = (value: string): boolean => CANONICAL_UUID.test(value);
