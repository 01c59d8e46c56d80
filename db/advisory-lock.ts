import type { Knex } from 'knex';

/** The part of a pg client this module calls. */
interface PgClient {
  query(text: string, values: readonly unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/**
 * Runs `body` while this process holds PostgreSQL's session advisory lock named `name`, on a pooled connection
 * kept aside for it (no transaction stays open); `busy` when another session holds it. A process that dies
 * loses its connection, and with it the lock: nothing to clean up after a kill -9.
 */
export async function withAdvisoryLock<T>(
  knex: Knex,
  name: string,
  body: () => Promise<T>,
): Promise<{ readonly busy: true } | { readonly busy: false; readonly result: T }> {
  const client = (await knex.client.acquireConnection()) as PgClient;
  try {
    const { rows } = await client.query('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [name]);
    if (rows[0].locked !== true) return { busy: true };
    try {
      return { busy: false, result: await body() };
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name]);
    }
  } finally {
    await knex.client.releaseConnection(client);
  }
}
