import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The service's version from its package.json, found upwards from here (as source or compiled under dist/). */
function serviceVersion(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'partner-integration-service' && pkg.version) return pkg.version;
  }
  return '0.0.0';
}

/** Names the service and its version in every webhook POST. */
export const USER_AGENT = `partner-integration-service/${serviceVersion()} (+webhooks)`;
