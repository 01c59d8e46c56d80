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
