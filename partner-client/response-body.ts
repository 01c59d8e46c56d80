import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

/** How much of a partner's response body is kept (spec: the first 4 KiB). */
export const RESPONSE_BODY_LIMIT = 4096;

/**
 * Reads at most `limit` bytes of a response body, decompressed when the partner used gzip or deflate (we
 * send Accept-Encoding: gzip, deflate), and stops there. Errors mid-body keep what was read.
 */
export async function readBodyPrefix(
  body: Readable,
  contentEncoding: string | undefined,
  limit = RESPONSE_BODY_LIMIT,
): Promise<string> {
  const encoding = contentEncoding?.trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : undefined;
  const stream = decoder ? body.pipe(decoder) : body;
  if (decoder) body.on('error', (error) => decoder.destroy(error));
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      chunks.push(Buffer.from(chunk as Uint8Array));
      size += (chunk as Uint8Array).length;
      if (size >= limit) break;
    }
  } catch {
    // A reset or timeout after the status line: the status already decided the outcome.
  } finally {
    body.destroy();
    decoder?.destroy();
  }
  return utf8Prefix(Buffer.concat(chunks), limit);
}

/** Valid UTF-8 text of at most `limit` bytes: cut on a character boundary, NUL removed (PostgreSQL text). */
export function utf8Prefix(bytes: Buffer, limit = RESPONSE_BODY_LIMIT): string {
  const text = cutAtCharBoundary(bytes, limit).toString('utf8').replaceAll('\u0000', '');
  // Invalid bytes decode to U+FFFD (3 bytes each), so the text can outgrow the byte limit once more.
  const encoded = Buffer.from(text, 'utf8');
  return encoded.length <= limit ? text : cutAtCharBoundary(encoded, limit).toString('utf8');
}

function cutAtCharBoundary(bytes: Buffer, limit: number): Buffer {
  if (bytes.length <= limit) return bytes;
  let end = limit;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}
