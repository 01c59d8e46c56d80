/** What a request asks to list, straight from the path. */
export type ListingTarget =
  { readonly kind: 'company'; readonly companyId: string } | { readonly kind: 'job'; readonly jobId: string };

/** A target the app may read, with the job's company resolved. */
export type ListingScope =
  | { readonly kind: 'company'; readonly companyId: string }
  | { readonly kind: 'job'; readonly jobId: string; readonly companyId: string };

/** Names the listing, so that a cursor made for one listing is refused by another. */
export const scopeKey = (scope: ListingScope): string =>
  scope.kind === 'company' ? `company:${scope.companyId}` : `job:${scope.jobId}`;
