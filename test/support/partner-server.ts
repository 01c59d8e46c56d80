import { findFreePort } from '../../lib/ports';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly rawHeaderNames: string[];
  readonly body: string;
}

export type PartnerHandler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** A real partner endpoint on 127.0.0.1 that records every request and answers with `handler`. */
export interface PartnerServer {
  readonly url: string;
  readonly port: number;
  readonly requests: ReceivedRequest[];
  handler: PartnerHandler;
  close(): Promise<void>;
}

export const answer =
  (status: number, body: string | Buffer = '', headers: http.OutgoingHttpHeaders = {}): PartnerHandler =>
  (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };

/** Answers by `webhook-id` header: the statuses in `script`, in order, the last repeated; 204 for an id it lacks. */
export function answerByScript(script: ReadonlyMap<string, readonly number[]>): PartnerHandler {
  const seen = new Map<string, number>();
  return (req, res) => {
    const id = String(req.headers['webhook-id']);
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    const steps = script.get(id) ?? [204];
    res.writeHead(steps[Math.min(n, steps.length) - 1]).end();
  };
}

export async function startPartnerServer(handler: PartnerHandler = answer(200)): Promise<PartnerServer> {
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const partner = { handler };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const rawHeaderNames = req.rawHeaders.filter((_, i) => i % 2 === 0);
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaderNames, body });
      partner.handler(req, res, body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(partner, {
    url: `http://127.0.0.1:${port}/hooks/partner`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export const closedPort = findFreePort;
