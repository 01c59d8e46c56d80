import type { Knex } from 'knex';

/**
 * Per-entity ordering (docs/partners.md, "Order per entity"): one lane per ordering key, and each ordered
 * webhook's place in its lane.
 * - `ordering_lanes.key_digest` is the key's HMAC under the subject index key, so the table never holds a
 *   candidate's id in clear; the key itself is kept like a body (`key_text` in clear, or sealed). An erasure
 *   clears all three: the lane takes no new webhook, and the subject's next one opens a new lane.
 * - A webhook's place is written by the statement that records its row, and only when that statement wrote
 *   the row: the lane's `last_seq` is raised in the same transaction, so its row lock makes sequence order
 *   commit order, and a repeated event_id takes no number.
 * - A lane's head is its lowest unsettled place; the partial index finds it and what waits behind it.
 * - A place goes with its webhook's row (the retention purge, a start that certainly failed).
 * - With WEBHOOK_ORDERING_ON_FAILURE=block, a head that failed finally is `blocked_since` until an operator
 *   skips it or retries it; a retry is an attempt past the fourth, so an attempt's number is no longer capped
 *   at 4 (the schedule still makes 4).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE ordering_lanes (
      id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      key_digest  bytea UNIQUE,
      key_text    text,
      key_sealed  bytea,
      key_key_id  text,
      last_seq    bigint NOT NULL DEFAULT 0,
      gaps        bigint NOT NULL DEFAULT 0,
      created_at  timestamptz NOT NULL DEFAULT now(),
      CHECK (key_text IS NULL OR key_sealed IS NULL)
    );
    CREATE TABLE ordering_places (
      webhook_id     uuid PRIMARY KEY REFERENCES webhook_events (id) ON DELETE CASCADE,
      lane_id        bigint NOT NULL REFERENCES ordering_lanes (id),
      seq            bigint NOT NULL CHECK (seq > 0),
      waiting_since  timestamptz,
      blocked_since  timestamptz,
      settled_at     timestamptz,
      gap            boolean NOT NULL DEFAULT false,
      UNIQUE (lane_id, seq)
    );
    CREATE INDEX ordering_places_open_idx ON ordering_places (lane_id, seq) WHERE settled_at IS NULL;
    CREATE INDEX ordering_places_waiting_idx ON ordering_places (waiting_since) WHERE waiting_since IS NOT NULL
      AND settled_at IS NULL;
    ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_attempt_check,
      ADD CONSTRAINT webhook_attempts_attempt_check CHECK (attempt >= 1);
    ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_claimed_attempt_check,
      ADD CONSTRAINT webhook_events_claimed_attempt_check CHECK (claimed_attempt >= 0);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE ordering_places; DROP TABLE ordering_lanes;
    ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_attempt_check,
      ADD CONSTRAINT webhook_attempts_attempt_check CHECK (attempt BETWEEN 1 AND 4);
    ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_claimed_attempt_check,
      ADD CONSTRAINT webhook_events_claimed_attempt_check CHECK (claimed_attempt BETWEEN 0 AND 4);
  `);
}
