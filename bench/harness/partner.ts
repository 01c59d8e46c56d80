import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { listenOnLoopback } from './server-child';

export interface PartnerServer {
  readonly url: string;
  /** performance.now() at the arrival of each POST, by its `webhook-id` header, since the last reset. */
  readonly receipts: Map<string, number[]>;
  /** Forgets the receipts; with failFirst, the first POST of each webhook-id is answered 500, later ones 204; each answer `latencyMs` after the body (default 0). */
  reset(options: { failFirst: boolean; latencyMs?: number }): void;
  close(): Promise<void>;
}

/** A partner endpoint on 127.0.0.1 that answers 204 and records when each webhook arrived. */
export async function startPartnerServer(): Promise<PartnerServer> {
  const receipts = new Map<string, number[]>();
  let failFirst = false;
  let latencyMs = 0;
  const server = http.createServer((req, res) => {
    const arrivedAt = performance.now();
    const id = String(req.headers['webhook-id'] ?? '');
    const seen = receipts.get(id) ?? [];
    seen.push(arrivedAt);
    receipts.set(id, seen);
    const status = failFirst && seen.length === 1 ? 500 : 204;
    req.resume();
    const answer = () => res.writeHead(status).end();
    req.on('end', () => (latencyMs ? setTimeout(answer, latencyMs) : answer()));
  });
  const listening = await listenOnLoopback(server);
  return {
    url: listening.url,
    receipts,
    reset(options) {
      receipts.clear();
      failFirst = options.failFirst;
      latencyMs = options.latencyMs ?? 0;
    },
    close: () => listening.close(),
  };
}
