import type { RouterMiddleware } from '@koa/router';
import type { Knex } from 'knex';
import type { ListingState } from './app-auth';
import { linkUrl, requestUrl } from './paging/links';
import { loadPage } from './paging/load-page';
import { readPageSelection, readPageSize } from './paging/page-params';
import { serializeUser } from './user-serializer';

/** The DRF PageNumberPagination envelope of the scope's users. */
export function listUsers(knex: Knex): RouterMiddleware<ListingState> {
  return async function listUsers(ctx) {
    const { scope } = ctx.state;
    const requested = requestUrl(ctx);
    const selection = readPageSelection(requested.searchParams, scope);
    const page = await loadPage(knex, scope, selection, readPageSize(requested.searchParams));
    ctx.body = {
      count: page.count,
      next: page.next && linkUrl(requested, scope, page.next),
      previous: page.previous && linkUrl(requested, scope, page.previous),
      results: page.rows.map(serializeUser),
    };
  };
}
