import type { Knex } from 'knex';

/**
 * The audit trail becomes a hash chain that `audit verify` can check (docs/access.md, "Audit trail: verifying it"):
 * - every row gets `seq` (its place), `prev_hash` (the hash of the row before it) and `hash`: SHA-256 of
 *   prev_hash and the row's canonical content. A BEFORE INSERT trigger fills them under a lock on the
 *   one row of `audit_chain`, so every writer, whatever its path, appends to one chain in commit order;
 * - `phase` and `operation_id`: a call to Temporal is an `intent` row before it and an `outcome` row after it,
 *   sharing the operation id; a change made in PostgreSQL is one `outcome` row in its own transaction;
 * - `audit_chain` keeps the head (the last row) and the anchor (the last row the retention purge removed;
 *   seq 0 and 32 zero bytes before any purge);
 * - UPDATE stays refused (016's trigger, which now refuses TRUNCATE too); DELETE only inside
 *   purge_audit_events(), which removes the oldest rows first, intact and chained, never one younger than 30
 *   days, and moves the anchor to each row it removes.
 * Existing rows are chained in (at, id) order. The canonical content's expression is repeated, on purpose, in
 * store/access/audit-chain.ts: the verifier recomputes it in its own SQL and hashes it in Node.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE audit_events
      ADD COLUMN operation_id uuid,
      ADD COLUMN phase text NOT NULL DEFAULT 'outcome' CHECK (phase IN ('intent', 'outcome')),
      ADD COLUMN seq bigint UNIQUE,
      ADD COLUMN prev_hash bytea,
      ADD COLUMN hash bytea,
      ALTER COLUMN outcome DROP NOT NULL,
      ADD CONSTRAINT audit_events_intent_has_no_outcome CHECK ((phase = 'intent') = (outcome IS NULL)),
      ADD CONSTRAINT audit_events_intent_has_no_error CHECK (outcome IS NOT NULL OR error IS NULL);
    ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only;
    UPDATE audit_events SET operation_id = gen_random_uuid();
    ALTER TABLE audit_events ALTER COLUMN operation_id SET NOT NULL,
      ALTER COLUMN operation_id SET DEFAULT gen_random_uuid();
    CREATE INDEX audit_events_operation ON audit_events (operation_id);

    CREATE TABLE audit_chain (
      one         boolean PRIMARY KEY DEFAULT true CHECK (one),
      head_seq    bigint NOT NULL,
      head_hash   bytea NOT NULL,
      anchor_seq  bigint NOT NULL,
      anchor_hash bytea NOT NULL
    );

    CREATE FUNCTION audit_event_content(e audit_events) RETURNS text LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_array(to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                               e.actor, e.action, e.target, e.parameters, e.outcome, e.error, e.request_id,
                               e.phase, e.operation_id)::text
    $$;
    CREATE FUNCTION audit_event_hash(e audit_events) RETURNS bytea LANGUAGE sql STABLE AS $$
      SELECT sha256(e.prev_hash || convert_to(audit_event_content(e), 'UTF8'))
    $$;

    -- Chain the rows there are, oldest first.
    DO $$
    DECLARE
      previous bytea := '\\x0000000000000000000000000000000000000000000000000000000000000000';
      position bigint := 0;
      r audit_events;
    BEGIN
      FOR r IN SELECT * FROM audit_events ORDER BY at, id LOOP
        position := position + 1;
        r.seq := position;
        r.prev_hash := previous;
        r.hash := audit_event_hash(r);
        UPDATE audit_events SET seq = r.seq, prev_hash = r.prev_hash, hash = r.hash WHERE id = r.id;
        previous := r.hash;
      END LOOP;
      INSERT INTO audit_chain VALUES (true, position, previous, 0,
        '\\x0000000000000000000000000000000000000000000000000000000000000000');
    END $$;
    ALTER TABLE audit_events ALTER COLUMN seq SET NOT NULL, ALTER COLUMN prev_hash SET NOT NULL,
      ALTER COLUMN hash SET NOT NULL;
    ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only;
    CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events FOR EACH STATEMENT
      EXECUTE FUNCTION audit_events_append_only();

    -- An insert extends the chain at its head; a delete (the purge's alone) moves its anchor past the oldest row.
    CREATE FUNCTION audit_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      chain audit_chain;
    BEGIN
      IF TG_OP = 'DELETE' AND current_setting('partner_service.audit_purge', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'audit_events rows are never deleted, except the oldest by the retention purge'
          USING ERRCODE = 'insufficient_privilege';
      END IF;
      SELECT * INTO chain FROM audit_chain WHERE one FOR UPDATE;
      IF TG_OP = 'INSERT' THEN
        NEW.seq := chain.head_seq + 1;
        NEW.prev_hash := chain.head_hash;
        NEW.hash := audit_event_hash(NEW);
        chain.head_seq := NEW.seq;
        chain.head_hash := NEW.hash;
      ELSE
        IF OLD.seq <> chain.anchor_seq + 1 OR OLD.prev_hash <> chain.anchor_hash OR OLD.hash <> audit_event_hash(OLD)
          OR OLD.at >= now() - interval '30 days' THEN
          RAISE EXCEPTION
            'the audit purge removes only the oldest row, intact and chained to the anchor, '
            'and none younger than 30 days (seq %)', OLD.seq
            USING ERRCODE = 'insufficient_privilege';
        END IF;
        chain.anchor_seq := OLD.seq;
        chain.anchor_hash := OLD.hash;
      END IF;
      PERFORM set_config('partner_service.audit_chain_write', 'on', true);
      UPDATE audit_chain SET head_seq = chain.head_seq, head_hash = chain.head_hash, anchor_seq = chain.anchor_seq,
        anchor_hash = chain.anchor_hash WHERE one;
      PERFORM set_config('partner_service.audit_chain_write', 'off', true);
      IF TG_OP = 'INSERT' THEN
        RETURN NEW;
      END IF;
      RETURN OLD;
    END $$;
    CREATE TRIGGER audit_events_chain BEFORE INSERT OR DELETE ON audit_events FOR EACH ROW
      EXECUTE FUNCTION audit_events_chain();

    CREATE FUNCTION audit_chain_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'UPDATE' OR current_setting('partner_service.audit_chain_write', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'audit_chain is written only by the audit trail''s own triggers'
          USING ERRCODE = 'insufficient_privilege';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER audit_chain_guard BEFORE INSERT OR UPDATE OR DELETE ON audit_chain FOR EACH ROW
      EXECUTE FUNCTION audit_chain_guard();
    CREATE TRIGGER audit_chain_no_truncate BEFORE TRUNCATE ON audit_chain FOR EACH STATEMENT
      EXECUTE FUNCTION audit_chain_guard();

    -- The retention purge: in chain order, up to max_rows rows, stopping at the first made at or after cutoff (or
    -- less than 30 days ago), and at a row that is not intact or not chained to the anchor (blocked_at): a purge
    -- never removes the evidence of tampering. Answers how many it removed and the anchor after them.
    CREATE FUNCTION purge_audit_events(cutoff timestamptz, max_rows integer,
                                       OUT removed integer, OUT anchor_seq bigint, OUT anchor_hash bytea,
                                         OUT blocked_at bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      due audit_events;
      chain audit_chain;
    BEGIN
      removed := 0;
      PERFORM set_config('partner_service.audit_purge', 'on', true);
      FOR due IN SELECT * FROM audit_events ORDER BY seq LIMIT max_rows LOOP
        EXIT WHEN due.at >= least(cutoff, now() - interval '30 days');
        SELECT * INTO chain FROM audit_chain WHERE one;
        IF due.seq <> chain.anchor_seq + 1 OR due.prev_hash <> chain.anchor_hash OR due.hash <> audit_event_hash(due)
          THEN
          blocked_at := due.seq;
          EXIT;
        END IF;
        DELETE FROM audit_events WHERE seq = due.seq;
        removed := removed + 1;
      END LOOP;
      PERFORM set_config('partner_service.audit_purge', 'off', true);
      SELECT c.anchor_seq, c.anchor_hash INTO anchor_seq, anchor_hash FROM audit_chain c WHERE one;
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION purge_audit_events(timestamptz, integer);
    DROP TABLE audit_chain;
    DROP FUNCTION audit_chain_guard();
    DROP TRIGGER audit_events_chain ON audit_events;
    DROP FUNCTION audit_events_chain();
    DROP TRIGGER audit_events_no_truncate ON audit_events;
    DROP FUNCTION audit_event_hash(audit_events);
    DROP FUNCTION audit_event_content(audit_events);
    DELETE FROM audit_events WHERE phase = 'intent';
    ALTER TABLE audit_events
      DROP CONSTRAINT audit_events_intent_has_no_outcome,
      DROP CONSTRAINT audit_events_intent_has_no_error,
      ALTER COLUMN outcome SET NOT NULL,
      DROP COLUMN operation_id, DROP COLUMN phase, DROP COLUMN seq, DROP COLUMN prev_hash, DROP COLUMN hash;
  `);
}
