import { z } from 'zod';
import type { Payload } from '@temporalio/common';
import { zodPathErrors } from '../../lib/validation';
import { InternalApiError } from '../../lib/errors';

// Temporal's codec protocol speaks `Payloads` in proto3 JSON: bytes (metadata values and data) are base64,
// standard or URL-safe. Validated here first, so a malformed body is a 400 and never reaches the codec.

const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, { message: 'must be base64' });

const payloadsJson = z.object({
  payloads: z.array(
    z.object({
      metadata: z.record(z.string(), base64).nullish(),
      data: base64.nullish(),
    }),
    { message: 'must be an array of payloads' },
  ),
});

export type PayloadJson = { metadata: Record<string, string>; data: string };

/** The payloads of a codec request body, or a 400 naming each malformed field. */
export function payloadsFromJson(body: unknown): Payload[] {
  const parsed = payloadsJson.safeParse(body);
  if (!parsed.success)
    throw new InternalApiError(400, {
      detail: 'Invalid payloads: expected {"payloads": [{"metadata": {…}, "data": "…"}]} in proto3 JSON.',
      errors: zodPathErrors(parsed.error),
    });
  return parsed.data.payloads.map(({ metadata, data }) => ({
    metadata: Object.fromEntries(
      Object.entries(metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    ),
    data: Buffer.from(data ?? '', 'base64'),
  }));
}

export function payloadsToJson(payloads: readonly Payload[]): { payloads: PayloadJson[] } {
  const b64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('base64');
  return {
    payloads: payloads.map(({ metadata, data }) => ({
      metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([key, value]) => [key, b64(value)])),
      data: b64(data),
    })),
  };
}
