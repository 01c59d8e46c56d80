import type { Middleware } from 'koa';

/** The `detail` messages of DRF's own exceptions, word for word, so DRF clients can match on them. */
export const DETAIL = {
  notAuthenticated: 'Authentication credentials were not provided.',
  authenticationFailed: 'Incorrect authentication credentials.',
  permissionDenied: 'You do not have permission to perform this action.',
  invalidPage: 'Invalid page.',
  invalidCursor: 'Invalid cursor',
  invalidHost: 'Invalid Host header.',
  methodNotAllowed: (method: string) => `Method "${method}" not allowed.`,
  /** Not DRF's own: an app whose scopes leave out what the request needs (docs/partners.md). */
  missingScope: (scope: string) => `This app does not have the scope "${scope}", which this request needs.`,
  /** Not DRF's own: a portal session that ended, expired or whose app was revoked. */
  sessionEnded: 'Your portal session has ended: open a new portal link.',
  csrfFailed: 'CSRF Failed: CSRF token missing or incorrect.',
} as const;

/** An expected failure that answers `{"detail": ...}` with its status, as a DRF APIException does. */
export class ListingError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 405,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'ListingError';
  }
}

/** Turns a thrown ListingError into its response; anything else goes on to the app's 500 handler. */
export const answerListingErrors: Middleware = async function answerListingErrors(ctx, next) {
  try {
    await next();
  } catch (error) {
    if (!(error instanceof ListingError)) throw error;
    ctx.status = error.status;
    ctx.body = { detail: error.detail };
  }
};
