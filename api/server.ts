import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type Koa from 'koa';
import { createApp } from './app';
import { createTemporalGateway } from '../temporal/gateway';
import { createTokenChecker } from '../application/access/token-checker';
import type { ApiDependencies } from './context';
import { createFeedNotifier } from './partner/feed-notifier';

export interface ApiServer {
  readonly server: http.Server;
  /** Base URL such as http://127.0.0.1:3000 */
  readonly url: string;
  /** Stops accepting connections and resolves once in-flight requests have finished. */
  close(): Promise<void>;
}

/** How long close() lets in-flight requests finish before it cuts their connections. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** The response a connection is answering now, kept on the connection until that response closes. */
const CURRENT_RESPONSE = Symbol('currentResponse');
type Connection = Socket & { [CURRENT_RESPONSE]?: http.ServerResponse };

/**
 * Starts the HTTP API on `port` (0 picks a free one) and `host`. The internal API needs a Temporal gateway and
 * a token checker: without them from the caller, the server makes its own (the gateway connects on first use)
 * and closes them on close().
 */
export async function startApiServer(
  deps: ApiDependencies,
  port = deps.config.PORT,
  host = deps.config.HOST,
): Promise<ApiServer> {
  const ownedGateway = deps.temporalGateway ? undefined : createTemporalGateway(deps.config, deps.logger);
  const ownedChecker = deps.tokenChecker
    ? undefined
    : createTokenChecker({ knex: deps.knex, logger: deps.logger, sharedToken: deps.config.INTERNAL_API_TOKEN });
  await ownedChecker?.start();
  const ownedNotifier = deps.feedNotifier ? undefined : createFeedNotifier(deps.knex, deps.logger);
  const closeOwned = () => Promise.allSettled([ownedChecker?.close(), ownedGateway?.close(), ownedNotifier?.close()]);
  const server = await serveHttp(
    createApp({
      ...deps,
      temporalGateway: deps.temporalGateway ?? ownedGateway,
      tokenChecker: deps.tokenChecker ?? ownedChecker,
      feedNotifier: deps.feedNotifier ?? ownedNotifier,
    }),
    port,
    host,
  ).catch(async (error: unknown) => {
    await closeOwned();
    throw error;
  });
  if (!ownedGateway && !ownedChecker && !ownedNotifier) return server;
  return { ...server, close: () => server.close().finally(closeOwned) };
}

/** Serves a Koa application on `port` and `host`, with the graceful close every process of the service uses. */
export async function serveHttp(app: Koa, port: number, host: string): Promise<ApiServer> {
  const handle = app.callback();
  // Koa answers its own errors (ctx.onerror): the handler's promise never rejects.
  const server = http.createServer((req, res) => void handle(req, res));
  server.keepAliveTimeout = 65_000;
  // Open connections, each with the response in flight on it, so that a shutdown can end keep-alive
  // connections once they are answered. Connections are kept rather than responses: a set that every
  // response passed through doubled the API's GC pauses under load (BENCHMARKS.md).
  const connections = new Set<Connection>();
  let closing: Promise<void> | undefined;
  server.on('connection', (connection: Connection) => {
    connections.add(connection);
    connection.once('close', () => connections.delete(connection));
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
    const connection = req.socket as Connection;
    connection[CURRENT_RESPONSE] = res;
    res.once('close', () => {
      if (connection[CURRENT_RESPONSE] === res) connection[CURRENT_RESPONSE] = undefined;
      if (closing) server.closeIdleConnections();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        const cutOff = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        cutOff.unref();
        server.close((error) => {
          clearTimeout(cutOff);
          if (error) reject(error);
          else resolve();
        });
        // In-flight requests finish and then close their connection; idle keep-alive sockets close now.
        for (const connection of connections) {
          const res = connection[CURRENT_RESPONSE];
          if (res && !res.headersSent) res.setHeader('Connection', 'close');
        }
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
