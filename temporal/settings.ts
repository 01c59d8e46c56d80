import type { DataConverter } from '@temporalio/common';
import { DEFAULT_TEMPORAL_ADDRESS, type Config } from '../lib/config';

// What the client side (API, CLI) and the worker must agree on to reach the same Temporal and read each
// other's payloads. Both import it from here; neither imports the other.

export const temporalAddress = (config: Config): string => config.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;

/**
 * The data converter of every client and worker. Today Temporal's default JSON payloads; a payload codec
 * (encryption) goes here so that both sides get it at once.
 */
export function dataConverterFor(_config: Config): DataConverter {
  return {};
}
