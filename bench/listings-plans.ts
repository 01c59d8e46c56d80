import type { Knex } from 'knex';
import { appAccessQuery } from '../api/listings/access-query';
import { pageQuery, type PageWindow } from '../api/listings/page-query';
import type { ListingScope } from '../api/listings/scope';
import { runSql, sql, type SqlFragment } from '../db/sql';

export interface ListingStatement {
  readonly label: string;
  readonly scope: ListingScope;
  readonly window?: PageWindow;
}

/** EXPLAIN ANALYZE of the access check and the page statement the API runs, for the report. */
export async function explainListingStatements(knex: Knex, appId: string, statements: readonly ListingStatement[]): Promise<string[]> {
  const sections: string[] = [];
  for (const { label, scope, window } of statements) {
    const query: SqlFragment = window
      ? pageQuery(scope, window)
      : appAccessQuery(appId, scope.kind === 'company' ? scope : { kind: 'job', jobId: scope.jobId });
    const rows = await runSql<{ 'QUERY PLAN': string }>(knex, sql`EXPLAIN (ANALYZE, COSTS OFF, BUFFERS OFF) ${query}`);
    sections.push(`#### ${label}`, '', '```text', query.sql.replace(/\s+/g, ' '), '', rows.map((r) => r['QUERY PLAN']).join('\n'), '```', '');
  }
  return sections;
}
