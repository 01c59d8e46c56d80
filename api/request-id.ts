import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

// Every request's id: the caller's X-Request-Id when it is sane, else a new UUID. It is sent back in the
// response's X-Request-Id and kept for the audit row of the change the request makes (application/access/audit.ts).

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** 1 to 128 characters of letters, digits and `._:-`: anything else (or nothing) gets a generated id, never an echo. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id a caller may give; undefined when it gave none or one that is not sane. */
export function callerRequestId(header: string): string | undefined {
  return SANE_REQUEST_ID.test(header) ? header : undefined;
}

export interface RequestIdState {
  requestId: string;
}

/** Sets ctx.state.requestId and the response's X-Request-Id, before anything else can answer. */
export const assignRequestId: Middleware<RequestIdState> = async function assignRequestId(ctx, next) {
  const requestId = callerRequestId(ctx.get(REQUEST_ID_HEADER)) ?? randomUUID();
  ctx.state.requestId = requestId;
  ctx.set(REQUEST_ID_HEADER, requestId);
  await next();
};
