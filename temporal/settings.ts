import type { DataConverter } from '@temporalio/common';
import { DEFAULT_TEMPORAL_ADDRESS, type Config } from '../lib/config';
import { AesGcmPayloadCodec } from './payload-codec';

// What the client side (API, CLI) and the worker must agree on to reach the same Temporal and read each
// other's payloads. Both import it from here; neither imports the other.

export const temporalAddress = (config: Config): string => config.temporal.address ?? DEFAULT_TEMPORAL_ADDRESS;

/**
 * The options of every connection to Temporal, the client's (`Connection.connect`) and the worker's
 * (`NativeConnection.connect`) alike: address, TLS, API key and gRPC headers from lib/temporal-connection-config.ts.
 */
export function temporalConnectionOptions(config: Config) {
  const { tls, apiKey, metadata } = config.temporal;
  return { address: temporalAddress(config), tls, apiKey, metadata };
}

/** The payload codec of PAYLOAD_ENCRYPTION_KEYS, or none when payloads are stored as plain JSON. */
export function payloadCodecFor(config: Config): AesGcmPayloadCodec | undefined {
  return config.PAYLOAD_ENCRYPTION_KEYS?.length ? new AesGcmPayloadCodec(config.PAYLOAD_ENCRYPTION_KEYS) : undefined;
}

/**
 * The data converter of every client and worker: Temporal's default JSON payloads, encrypted by the
 * AES-256-GCM codec when PAYLOAD_ENCRYPTION_KEYS is set, so that both sides get it at once.
 */
export function dataConverterFor(config: Config): DataConverter {
  const codec = payloadCodecFor(config);
  return codec ? { payloadCodecs: [codec] } : {};
}
