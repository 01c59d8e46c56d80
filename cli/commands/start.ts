import { randomBytes } from 'node:crypto';
import type { Command } from '../command';
import { bootstrap, cleanUpOnFailure, openMigratedDatabase } from '../bootstrap';
import { refuseToStartWithoutKeys } from '../../application/personal-data/keyed-deployment';
import { startApiServer } from '../../api/server';
import { uiCodecEndpoint } from '../../api/codec/router';
import type { Config } from '../../lib/config';
import { useDevelopmentIndexKeyWhenUnkeyed } from '../../application/personal-data/index-keys';
import { createTemporalGateway } from '../../temporal/gateway';
import { importDemoDirectoryIfEmpty } from '../../directory/demo-directory';
import { preferPort } from '../../lib/ports';
import { provideLocalTemporal } from '../../temporal/local-temporal';
import { exitOnTemporalSetupError } from '../temporal-setup';
import { PARTNER_INBOX_PORT, startPartnerInbox } from '../../api/partner-inbox/start';
import type { Logger } from '../../lib/logger';
import type { Shutdown } from '../../lib/shutdown';
import { throwIfStopping } from '../../lib/abort';
import { workerPolling } from '../../worker/readiness';

export const startCommand: Command = {
  name: 'start',
  auditActions: { '': [] },
  summary:
    'All in one: migrate, import the demo directory into an empty database, run Temporal, serve the API, run the ' +
    'worker',
  usage: [
    'Usage: partner-service start',
    '',
    'Applies pending migrations, imports examples/demo-directory.json when the directory is empty,',
    'uses the configured Temporal (TEMPORAL_ADDRESS or a temporal.toml profile, docs/temporal-connection.md)',
    'or starts a Temporal dev server (state under DATA_DIR/temporal), serves the',
    'API on HOST:PORT and runs the webhook worker in the same process.',
    '',
    'With none of DATABASE_URL, Temporal and PARTNER_ENDPOINT configured, it also runs the local partner',
    'inbox on 127.0.0.1 (port 3002 when free) as the partner endpoint: it answers 204 and shows the last',
    'deliveries, their headers and their authorization and signature checks.',
  ].join('\n'),
  async run(_args, { verbose }) {
    const runtime = bootstrap({ verbose });
    runtime.shutdown.listen();
    // Every step gives up when a stop signal comes (killing the child process it was starting), so that
    // SIGINT or SIGTERM stops the process within 2 s at any moment of its start-up (docs/operations.md).
    return cleanUpOnFailure(runtime, async () => {
      const { logger, shutdown } = runtime;
      const { signal } = shutdown;
      const database = await openMigratedDatabase(runtime);
      // It runs a worker: without keys in a keyed deployment it could record no attempt (exit 2, one line).
      await refuseToStartWithoutKeys(database.knex, runtime.config);
      throwIfStopping(signal);
      await importDemoDirectoryIfEmpty(database.knex, logger);
      // Development mode: with no index key set, a deployment that never had one indexes with the public development
      // key.
      await useDevelopmentIndexKeyWhenUnkeyed(database.knex, runtime.config);
      throwIfStopping(signal);
      const codecEndpoint = localCodecEndpoint(runtime.config);
      const temporal = await provideLocalTemporal(runtime.config, logger, undefined, {
        uiCodecEndpoint: codecEndpoint,
        signal,
        // PostgreSQL and the dev server do not need each other to stop: they stop together, from its spawn on.
        stopWith: (stop) => shutdown.add('temporal dev server', stop, { withPrevious: true }),
      });
      throwIfStopping(signal);
      const config: Config = {
        ...runtime.config,
        temporal: { ...runtime.config.temporal, address: temporal.address ?? runtime.config.temporal.address },
        CODEC_CORS_ORIGINS: [...runtime.config.CODEC_CORS_ORIGINS, ...devUiOrigins(codecEndpoint && temporal.uiUrl)],
      };
      // Before the worker, so that its first POST finds the inbox listening.
      const inbox = fullyEmbedded(runtime.config) ? await startLocalPartnerInbox(config, logger, shutdown) : undefined;
      throwIfStopping(signal);
      // Loaded here, not at the top: the CLI's client commands must not load the worker's native core.
      const { startWebhookWorker } = await import('../../worker/webhook-worker.js');
      throwIfStopping(signal);
      const worker = startWebhookWorker({ config: inbox?.workerConfig ?? config, logger, knex: database.knex });
      shutdown.add('worker', () => worker.stop());
      exitOnTemporalSetupError(runtime, worker.done);
      // Connects on first use, so the API serves while Temporal is down (webhooks are then refused until it answers).
      // While the worker polls, starts go through its connection with eager start (one round trip less).
      const temporalGateway = createTemporalGateway(config, logger, {
        eagerStartVia: () => worker.pollingConnection(),
      });
      shutdown.add('temporal client', () => temporalGateway.close());
      // Ready once the worker polls: Temporal then answers, the search attributes are registered and a webhook
      // posted now is accepted. Without the internal webhook API, a worker paused for want of a partner is ready.
      const readinessChecks = [workerPolling(worker, { pausedIsReady: !config.INTERNAL_API_TOKEN })];
      const api = await startApiServer({ config, knex: database.knex, logger, temporalGateway, readinessChecks });
      shutdown.add('http', () => api.close());
      throwIfStopping(signal);
      const urls = {
        api: api.url,
        openapi: `${api.url}/openapi.json`,
        scim: `${api.url}/scim/v2`,
        temporal: temporal.address ?? 'none',
        temporalUi: temporal.uiUrl ?? (temporal.source === 'configured' ? 'the UI of your Temporal' : 'none'),
        // Served with the keys alone, for named tokens of scope decode; the dev UI is wired only with CODEC_AUTH_TOKEN.
        codec: config.PAYLOAD_ENCRYPTION_KEYS?.length ? `${api.url}/codec` : 'off (set PAYLOAD_ENCRYPTION_KEYS)',
        partnerInbox: inbox?.url ?? 'off',
      };
      logger.info(
        { ...urls, temporalSource: temporal.source },
        `partner service started: API ${urls.api}, OpenAPI ${urls.openapi}, SCIM ${urls.scim}, Temporal ` +
          `${urls.temporal}, Temporal UI ${urls.temporalUi}, partner inbox ${urls.partnerInbox}`,
      );
      return 0;
    });
  },
};

/**
 * Nothing configured that lives outside this process: the newcomer's `npm start`. Only then does the local
 * partner inbox stand in for the partner; anywhere else a missing partner keeps delivery paused (a real
 * deployment must never deliver to a stand-in).
 */
function fullyEmbedded(config: Config): boolean {
  return !config.DATABASE_URL && !config.temporal.address && !config.PARTNER_ENDPOINT;
}

/**
 * Starts the partner inbox and returns the worker's configuration pointing at it: the configured token and
 * signing secrets, else fresh random ones (never logged), so that the inbox shows both checks working.
 */
async function startLocalPartnerInbox(
  config: Config,
  logger: Logger,
  shutdown: Shutdown,
): Promise<{ url: string; workerConfig: Config }> {
  const token = config.PARTNER_ACCESS_TOKEN ?? randomBytes(24).toString('base64url');
  const signingSecrets = config.PARTNER_SIGNING_SECRETS ?? [randomBytes(32)];
  const inbox = await startPartnerInbox({
    token,
    signingSecrets,
    logger: logger.child({ component: 'partner-inbox' }),
    port: await preferPort(PARTNER_INBOX_PORT),
  });
  shutdown.add('partner inbox', () => inbox.close());
  logger.warn(
    { partnerInbox: inbox.url, partnerEndpoint: inbox.endpoint },
    `no PARTNER_ENDPOINT: webhooks are delivered to the local partner inbox at ${inbox.url} (a loopback ` +
      `receiver that answers 204); ` +
      'set PARTNER_ENDPOINT and PARTNER_ACCESS_TOKEN to deliver to a real partner',
  );
  return {
    url: inbox.url,
    workerConfig: {
      ...config,
      PARTNER_ENDPOINT: inbox.endpoint,
      PARTNER_ACCESS_TOKEN: token,
      PARTNER_SIGNING_SECRETS: signingSecrets,
    },
  };
}

/**
 * The codec endpoint for the dev server's UI when the codec server is on: this API (on loopback when it
 * binds every address), with the token in the path, since that UI cannot send an Authorization header.
 */
function localCodecEndpoint(config: Config): string | undefined {
  if (!config.CODEC_AUTH_TOKEN || !config.PAYLOAD_ENCRYPTION_KEYS?.length) return undefined;
  const host = ['0.0.0.0', '::'].includes(config.HOST)
    ? '127.0.0.1'
    : config.HOST.includes(':')
      ? `[${config.HOST}]`
      : config.HOST;
  return uiCodecEndpoint(`http://${host}:${config.PORT}`, config.CODEC_AUTH_TOKEN);
}

/** The dev UI's origin by both loopback names, so the browser may call the codec from either. */
function devUiOrigins(uiUrl: string | undefined): string[] {
  if (!uiUrl) return [];
  const { port } = new URL(uiUrl);
  return [`http://127.0.0.1:${port}`, `http://localhost:${port}`];
}
