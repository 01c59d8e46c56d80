// The whole webhook path for a test file: a dev server, a database, a loopback partner, the API with its
// Temporal gateway, and the service's workers, each started once and stopped together.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { startApiServer, type ApiServer } from '../../api/server';
import { createTemporalGateway, type TemporalGateway } from '../../temporal/gateway';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { startPartnerServer, type PartnerHandler, type PartnerServer } from './partner-server';
import { createTestDatabase, type TestDatabase } from './database';
import { startTestDevServer, startTestWorker, type TestWorker } from './temporal';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from './tokens';

const COMPRESS_TIMERS = require.resolve('./compress-timers');

export interface WebhookStack {
  readonly server: DevServer;
  readonly db: TestDatabase;
  readonly partner: PartnerServer;
  readonly config: Config;
  readonly gateway: TemporalGateway;
  readonly api: ApiServer;
  readonly native: NativeConnection;
  readonly connection: Connection;
  /** A client with Temporal's default data converter: it sees payloads as Temporal stores them. */
  readonly client: Client;
  /** With `compressedQueue`: a task queue whose worker makes every timer 1000 times shorter. */
  readonly compressedQueue: string;
  close(): Promise<void>;
}

export interface WebhookStackOptions {
  /** Configuration on top of the stack's own (server address, a fresh task queue, partner, tokens). */
  readonly env?: Record<string, string>;
  readonly partnerHandler?: PartnerHandler;
  /** Compress the timers of the main worker. */
  readonly compressTimers?: boolean;
  /** Also run a worker on a second queue with compressed timers. */
  readonly compressedQueue?: boolean;
}

export async function startWebhookStack({
  env = {},
  partnerHandler,
  compressTimers = false,
  compressedQueue = false,
}: WebhookStackOptions = {}): Promise<WebhookStack> {
  const logger = createLogger('silent');
  const server = await startTestDevServer();
  const db = await createTestDatabase();
  const partner = await startPartnerServer(partnerHandler);
  const config = loadConfig({
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    PARTNER_ENDPOINT: partner.url,
    PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
    PARTNER_TIMEOUT_MS: '2000',
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
    ...env,
  });
  const gateway = createTemporalGateway(config, logger);
  const api = await startApiServer({ config, knex: db.knex, logger, temporalGateway: gateway }, 0, '127.0.0.1');
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const workers: TestWorker[] = [];
  const compressed = { interceptorModules: [COMPRESS_TIMERS] };
  workers.push(await startTestWorker({ config, knex: db.knex, logger }, native, compressTimers ? compressed : {}));
  const secondQueue = `test-compressed-${randomUUID()}`;
  if (compressedQueue) {
    workers.push(
      await startTestWorker(
        { config: { ...config, TEMPORAL_TASK_QUEUE: secondQueue }, knex: db.knex, logger },
        native,
        compressed,
      ),
    );
  }
  return {
    server,
    db,
    partner,
    config,
    gateway,
    api,
    native,
    connection,
    client,
    compressedQueue: secondQueue,
    async close() {
      for (const worker of workers) await worker.stop();
      await native.close();
      await connection.close();
      await api.close();
      await gateway.close();
      await partner.close();
      await db.drop();
      await server.stop();
    },
  };
}
