import { createKnex } from '../../db/database';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { startApiServer } from '../../api/server';
import { serveInChild } from './server-child';

/** The real API (api/server.ts) on a free loopback port, in its own process; DATABASE_URL from the parent. */
void serveInChild(async () => {
  const config = loadConfig({ DATABASE_URL: process.env.DATABASE_URL, LOG_LEVEL: 'warn' });
  const knex = createKnex(config.DATABASE_URL!);
  const api = await startApiServer({ config, knex, logger: createLogger(config.LOG_LEVEL) }, 0, '127.0.0.1');
  // Closing only the HTTP server: the process exits right after, so the pool goes with it, and requests
  // autocannon abandoned at the end of a run are not turned into logged errors by a pool shutdown.
  return { url: api.url, close: () => api.close() };
});
