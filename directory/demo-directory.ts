import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Logger } from '../lib/logger';
import { importDirectoryFile } from './import-directory';

/** examples/demo-directory.json, found from both the source tree and dist/. */
export function demoDirectoryFile(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'examples', 'demo-directory.json');
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('examples/demo-directory.json not found');
}

/** Imports the demo directory when no company, user or group exists yet, so a first `start` shows data. */
export async function importDemoDirectoryIfEmpty(knex: Knex, logger: Logger): Promise<boolean> {
  const { rows } = await knex.raw<{ rows: { empty: boolean }[] }>(
    `SELECT NOT EXISTS (SELECT 1 FROM companies) AND NOT EXISTS (SELECT 1 FROM users)
        AND NOT EXISTS (SELECT 1 FROM scim_groups) AS empty`,
  );
  if (!rows[0].empty) return false;
  const summary = await importDirectoryFile(knex, demoDirectoryFile());
  logger.info({ summary }, 'empty database: imported the demo directory (examples/demo-directory.json)');
  return true;
}
