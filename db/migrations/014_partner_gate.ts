import type { Knex } from 'knex';

/**
 * The partner gate: one row per delivery task queue, shared by every worker of that queue. It holds an
 * operator's pause, the circuit breaker, a partner's Retry-After, the rate cap in force and the next free send
 * slot, so one cap and one hold cover the whole deployment. A held delivery is marked in its own row
 * (`held_since`, and the queue whose gate holds it) so it can be counted, listed and released oldest first. Literals
 * are frozen here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE partner_gate (
      task_queue text PRIMARY KEY,
      paused_at timestamptz,
      pause_reason text,
      tripped_at timestamptz,
      consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
      trips bigint NOT NULL DEFAULT 0 CHECK (trips >= 0),
      probe_due_at timestamptz,
      throttled_since timestamptz,
      retry_after_until timestamptz,
      max_per_second integer CHECK (max_per_second BETWEEN 1 AND 100000),
      next_send_at timestamptz NOT NULL DEFAULT '-infinity',
      guard_owner text,
      guard_lease_until timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((paused_at IS NULL) = (pause_reason IS NULL))
    );
    ALTER TABLE webhook_events ADD COLUMN held_since timestamptz, ADD COLUMN held_queue text;
    CREATE INDEX webhook_events_held ON webhook_events (held_queue, accepted_at, id) WHERE held_since IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX webhook_events_held;
    ALTER TABLE webhook_events DROP COLUMN held_since, DROP COLUMN held_queue;
    DROP TABLE partner_gate;
  `);
}
