import { createHash } from 'node:crypto';
import { DETAIL, ListingError } from '../errors';
import { scopeKey, type ListingScope } from '../scope';

/** A position in a listing: page `page` starts right after (next) or ends right before (previous) `boundary`. */
export interface Cursor {
  readonly direction: 'next' | 'previous';
  /** The page number the cursor leads to; always 2 or more (links to page 1 carry no cursor). */
  readonly page: number;
  /** A user id of the neighbouring page, excluded from this one. */
  readonly boundary: number;
}

const DIRECTION_CODE = { next: 'n', previous: 'p' } as const;
const PAYLOAD = /^([np])\.([1-9]\d{0,14})\.([1-9]\d{0,15})\.([0-9a-f]{16})$/;

/**
 * A checksum over the listing and the position: an edited or truncated cursor, or one copied from another
 * listing, is refused. It is no secret: a cursor only picks a position, and access is checked regardless.
 */
const checksum = (scope: ListingScope, position: string) =>
  createHash('sha256')
    .update(`${scopeKey(scope)}|${position}`)
    .digest('hex')
    .slice(0, 16);

export function encodeCursor(scope: ListingScope, cursor: Cursor): string {
  const position = `${DIRECTION_CODE[cursor.direction]}.${cursor.page}.${cursor.boundary}`;
  return Buffer.from(`${position}.${checksum(scope, position)}`).toString('base64url');
}

/** Decodes a cursor made by encodeCursor for this listing; anything else is 404 "Invalid cursor", as in DRF. */
export function decodeCursor(scope: ListingScope, token: string): Cursor {
  const bytes = Buffer.from(token, 'base64url');
  // Re-encoding must give the token back: base64 decoding silently skips stray characters.
  const match = bytes.toString('base64url') === token ? PAYLOAD.exec(bytes.toString('latin1')) : null;
  if (!match) throw new ListingError(404, DETAIL.invalidCursor);
  const [, code, pageText, boundaryText, sum] = match;
  const page = Number(pageText);
  const boundary = Number(boundaryText);
  if (sum !== checksum(scope, `${code}.${pageText}.${boundaryText}`) || page < 2 || !Number.isSafeInteger(boundary)) {
    throw new ListingError(404, DETAIL.invalidCursor);
  }
  return { direction: code === 'n' ? 'next' : 'previous', page, boundary };
}
