// A loopback partner for the ordering tests: it records each POST's ordering headers and when it began and
// ended, so a test can check the order of a key's POSTs and that no two of them overlapped.
import type http from 'node:http';
import type { PartnerHandler } from './partner-server';

/** One POST as the partner saw it. */
export interface OrderingArrival {
  readonly key: string | undefined;
  readonly sequence: number | undefined;
  readonly webhookId: string;
  readonly status: number;
  readonly startedMs: number;
  readonly endedMs: number;
}

/**
 * A handler that answers the `tries`-th POST of a webhook as `answer` says, after its delay, and then pushes the
 * arrival onto `arrivals`. `tries` counts the POSTs of each webhook-id.
 */
export function orderingPartnerHandler(
  arrivals: OrderingArrival[],
  tries: Map<string, number>,
  answer: (webhookId: string, tries: number) => { status: number; delayMs: number },
): PartnerHandler {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const webhookId = String(req.headers['webhook-id']);
    const n = (tries.get(webhookId) ?? 0) + 1;
    tries.set(webhookId, n);
    const startedMs = performance.now();
    const { status, delayMs } = answer(webhookId, n);
    setTimeout(() => {
      const key = req.headers['webhook-ordering-key'];
      const sequence = req.headers['webhook-sequence'];
      arrivals.push({
        key: key === undefined ? undefined : String(key),
        sequence: sequence === undefined ? undefined : Number(sequence),
        webhookId,
        status,
        startedMs,
        endedMs: performance.now(),
      });
      res.writeHead(status).end();
    }, delayMs);
  };
}
