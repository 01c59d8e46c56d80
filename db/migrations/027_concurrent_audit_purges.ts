import type { Knex } from 'knex';

/**
 * Two audit purges at once: each read the oldest rows before the other's deletes committed, so the second counted
 * a row the first had removed (its DELETE found nothing) and then stopped at the next one as if it were not
 * chained to the anchor (a false blocked_at). A purge now takes the chain's row lock before it reads the rows due,
 * so purges run one after the other and each reads what the previous left; and it counts only a row its own
 * DELETE removed. Nothing else changes: the same order, bounds and checks (migration 020).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION purge_audit_events(cutoff timestamptz, max_rows integer,
                                                  OUT removed integer, OUT anchor_seq bigint, OUT anchor_hash bytea, OUT blocked_at bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      due audit_events;
      chain audit_chain;
      deleted integer;
    BEGIN
      removed := 0;
      -- Held until the purge's transaction ends (every insert and delete takes it too): a concurrent purge waits
      -- here, and its rows due below are read after this one's deletes are committed.
      PERFORM 1 FROM audit_chain WHERE one FOR UPDATE;
      PERFORM set_config('partner_service.audit_purge', 'on', true);
      FOR due IN SELECT * FROM audit_events ORDER BY seq LIMIT max_rows LOOP
        EXIT WHEN due.at >= least(cutoff, now() - interval '30 days');
        SELECT * INTO chain FROM audit_chain WHERE one;
        IF due.seq <> chain.anchor_seq + 1 OR due.prev_hash <> chain.anchor_hash OR due.hash <> audit_event_hash(due) THEN
          blocked_at := due.seq;
          EXIT;
        END IF;
        DELETE FROM audit_events WHERE seq = due.seq;
        GET DIAGNOSTICS deleted = ROW_COUNT;
        EXIT WHEN deleted = 0;
        removed := removed + 1;
      END LOOP;
      PERFORM set_config('partner_service.audit_purge', 'off', true);
      SELECT c.anchor_seq, c.anchor_hash INTO anchor_seq, anchor_hash FROM audit_chain c WHERE one;
    END $$;
  `);
}

/** Migration 020's function again. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION purge_audit_events(cutoff timestamptz, max_rows integer,
                                                  OUT removed integer, OUT anchor_seq bigint, OUT anchor_hash bytea, OUT blocked_at bigint)
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
        IF due.seq <> chain.anchor_seq + 1 OR due.prev_hash <> chain.anchor_hash OR due.hash <> audit_event_hash(due) THEN
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
