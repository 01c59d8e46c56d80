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

/** Starts the HTTP API on `port` (0 picks a free one) and `host`. */
export async function startApiServer(deps: ApiDependencies, port = deps.config.PORT, host = deps.config.HOST): Promise<ApiServer> {
  const app = createApp(deps);
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
