import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import type { ApiDependencies } from './context';

export interface ApiServer {
  readonly server: http.Server;
  /** Base URL such as http://127.0.0.1:3000 */
  readonly url: string;
  /** Stops accepting connections and resolves once in-flight requests have finished. */
  close(): Promise<void>;
}

/** How long close() lets in-flight requests finish before it cuts their connections. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** Starts the HTTP API on `port` (0 picks a free one) and `host`. */
export async function startApiServer(deps: ApiDependencies, port = deps.config.PORT, host = deps.config.HOST): Promise<ApiServer> {
  const app = createApp(deps);
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  // Responses in flight, so that a shutdown can end their keep-alive connections once they are answered.
  const inFlight = new Set<http.ServerResponse>();
  let closing: Promise<void> | undefined;
  server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
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
        for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
