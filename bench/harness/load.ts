/** The part of autocannon's result the benchmarks report (autocannon ships no type declarations). */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
}) => Promise<AutocannonResult>;

// eslint-disable-next-line @typescript-eslint/no-require-imports -- autocannon ships no types
const autocannon: Autocannon = require('autocannon');

export interface LoadFigures {
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  readonly requests: number;
}

/** Drives one URL with `connections` keep-alive connections for `seconds`. */
export async function drive(
  url: string,
  headers: Record<string, string>,
  connections: number,
  seconds: number,
): Promise<LoadFigures> {
  const result = await autocannon({ url, connections, duration: seconds, headers });
  const { requests, latency } = result;
  return {
    reqPerSec: requests.average,
    p50Ms: latency.p50,
    p99Ms: latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    requests: requests.total,
  };
}
