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

/**
 * Paths of every string (object keys included) that PostgreSQL text and jsonb reject: NUL characters and
 * lone UTF-16 surrogates. JSON allows both, so validated input is checked for them before it is written.
 */
export function unstorableTextErrors(value: unknown, path: PathSegment[] = []): PathError[] {
  const bad = (s: string) => s.includes('\0') || !s.isWellFormed();
  if (typeof value === 'string') return bad(value) ? [{ path: formatJsonPath(path), message: UNSTORABLE_TEXT }] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => unstorableTextErrors(item, [...path, i]));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) =>
      bad(key) ? [{ path: formatJsonPath([...path, key]), message: UNSTORABLE_TEXT }] : unstorableTextErrors(item, [...path, key]));
  }
  return [];
}
