import { hashAppKey, verifyAppKey } from './app-keys';

const BEARER = /^Bearer +(\S+) *$/i;

export type BearerCheck = 'missing' | 'invalid' | 'valid';

/** The token of an `Authorization: Bearer <token>` header; undefined when there is none. */
export const presentedBearerToken = (authorization: string): string | undefined => BEARER.exec(authorization)?.[1];

/**
 * Checks `Authorization: Bearer <token>` headers against one configured token. The token is kept only as
 * a salted hash and compared in constant time (lib/app-keys), whatever the presented length.
 */
export function bearerTokenChecker(token: string): (authorization: string) => BearerCheck {
  const stored = hashAppKey(token);
  return (authorization) => {
    const presented = presentedBearerToken(authorization);
    if (presented === undefined) return 'missing';
    return verifyAppKey(presented, stored) ? 'valid' : 'invalid';
  };
}
