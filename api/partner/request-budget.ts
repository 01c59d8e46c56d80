/**
 * Each app's request budget in this process: a token bucket that holds a minute's worth of requests and refills
 * evenly, so a partner may burst up to its budget and then goes on at its rate. Per process, as the admission bound
 * is: N api processes allow N budgets, which docs/partners.md states.
 */
export interface RequestBudget {
  /** Takes one request from `appId`'s bucket: 0 when it may go on, else the seconds until it may. */
  take(appId: string): number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Buckets untouched for this long are full again and can be forgotten. */
const IDLE_MS = 60_000;

export function requestBudget(perMinute: number, now: () => number = Date.now): RequestBudget {
  const perMs = perMinute / 60_000;
  const buckets = new Map<string, Bucket>();
  let lastSweep = now();
  const sweep = (at: number) => {
    if (at - lastSweep < IDLE_MS) return;
    lastSweep = at;
    for (const [appId, bucket] of buckets) if (at - bucket.at >= IDLE_MS) buckets.delete(appId);
  };
  return {
    take(appId) {
      const at = now();
      sweep(at);
      const bucket = buckets.get(appId) ?? { tokens: perMinute, at };
      bucket.tokens = Math.min(perMinute, bucket.tokens + (at - bucket.at) * perMs);
      bucket.at = at;
      buckets.set(appId, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
    },
  };
}
