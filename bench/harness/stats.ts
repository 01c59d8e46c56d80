/** Nearest-rank quantiles (p50 of an odd count is its median); NaN for no values. */
export function quantiles(values: readonly number[]): { p50: number; p95: number; p99: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] : NaN);
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/** The median; of an even count, the mean of the middle two. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
