import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';

// Each Temporal namespace's retention of closed runs, as the workers last read it (DescribeNamespace). Only a
// worker finishes a webhook, and every worker records this at its start and before each retention run, so a
// finished row's namespace is always known here.

export async function recordNamespaceRetention(knex: Knex, namespace: string, retentionSeconds: number): Promise<void> {
  await runSql(
    knex,
    sql`INSERT INTO temporal_namespaces (namespace, retention_seconds) VALUES (${namespace}, ${retentionSeconds})
        ON CONFLICT (namespace) DO UPDATE SET retention_seconds = EXCLUDED.retention_seconds, read_at = now()`,
  );
}

/** The namespace's retention in seconds as last recorded; 0 when no worker has read it (no run has closed). */
export async function namespaceRetentionSeconds(knex: Knex, namespace: string): Promise<number> {
  const [row] = await runSql<{ retention_seconds: string }>(
    knex,
    sql`SELECT retention_seconds FROM temporal_namespaces WHERE namespace = ${namespace}`,
  );
  return row ? Number(row.retention_seconds) : 0;
}
