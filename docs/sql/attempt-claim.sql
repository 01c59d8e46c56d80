-- Written by test/webhooks/attempt-statements.test.ts; do not edit. Assembled by
-- store/webhooks/attempt-claim.ts (claimStatement, with claimGateCtes and CLAIM_GATE_COLUMNS of store/partner/partner-gate.ts).
-- After a change to the statement: WRITE_SQL=1 npx mocha test/webhooks/attempt-statements.test.ts

-- The attempt's claim.
-- Prepared as `claim-attempt`. Bound values of the test's example:
--   $1 = 'partner-deliveries'
--   $2 = false
--   $3 = 50
--   $4 = 'partner-deliveries'
--   $5 = false
--   $6 = 1
--   $7 = 50
--   $8 = false
--   $9 = '8f1d2c3b-4a5e-5f60-8172-93a4b5c6d7e8'
--   $10 = 'candidate-new-acme-c-77'
--   $11 = 'candidate'
--   $12 = 'new'
--   $13 = 'acme'
--   $14 = '{"event_type":"candidate","action":"new","data":{"company":{"id":"acme","intern…
--   $15 = NULL
--   $16 = NULL
--   $17 = ["b46c078033d65bccca5257deee1a0489b78b21f993d5dd7138946e510553f944","8874a8eac66…
--   $18 = 'development'
--   $19 = 'webhook-candidate-new-candidate-new-acme-c-77'
--   $20 = '0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'
--   $21 = false
--   $22 = true
--   $23 = NULL
--   $24 = NULL
--   $25 = 1
--   $26 = 'partner-deliveries'
--   $27 = 'webhook-candidate-new-candidate-new-acme-c-77'
--   $28 = '0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'
--   $29 = 1
--   $30 = 1
--   $31 = '8f1d2c3b-4a5e-5f60-8172-93a4b5c6d7e8'

WITH gate AS (
        SELECT CASE WHEN paused_at IS NOT NULL THEN 'paused' WHEN tripped_at IS NOT NULL THEN 'tripped' WHEN retry_after_until > clock_timestamp() THEN 'throttled' ELSE 'active' END AS state, pause_reason, next_send_at FROM partner_gate WHERE task_queue = $1
      ), open AS (
        SELECT $2::boolean OR NOT EXISTS (SELECT 1 FROM gate WHERE state <> 'active') AS open
      ), slot AS (
        UPDATE partner_gate g SET next_send_at = GREATEST(g.next_send_at, clock_timestamp()) + make_interval(secs => 1.0 / COALESCE(g.max_per_second, $3::int))
         WHERE g.task_queue = $4 AND NOT $5::boolean AND (SELECT open FROM open)
           AND g.next_send_at < clock_timestamp() + make_interval(secs => $6::float8)
        RETURNING g.next_send_at - make_interval(secs => 1.0 / COALESCE(g.max_per_second, $7::int)) AS send_at
      ), may_send AS (
        SELECT (SELECT open FROM open)
           AND ($8::boolean OR EXISTS (SELECT 1 FROM slot WHERE send_at <= clock_timestamp() + interval '1 millisecond')) AS may_send
      ), claim AS (
      INSERT INTO webhook_events AS e (id, event_id, event_type, action, company_id, body, body_sealed, body_key_id, subject_keys, subject_key_id, workflow_id, run_id, is_test, start_reported, redelivery_of, redelivery_key, claimed_attempt, held_since, held_queue)
      SELECT $9::uuid, $10::text, $11::text, $12::text, $13::text, $14::json, $15::bytea, $16::text, $17::text[], $18::text, $19::text, $20::text, $21::boolean, $22::boolean, $23::uuid, $24::text,
             CASE WHEN may_send THEN $25::smallint ELSE 0 END,
             CASE WHEN NOT open THEN date_trunc('milliseconds', clock_timestamp()) END,
             CASE WHEN NOT open THEN $26::text END
        FROM may_send, open
      ON CONFLICT (id) DO UPDATE
         SET claimed_attempt = GREATEST(e.claimed_attempt, EXCLUDED.claimed_attempt), held_since = EXCLUDED.held_since,
             held_queue = COALESCE(EXCLUDED.held_queue, e.held_queue), workflow_id = COALESCE(e.workflow_id, $27), run_id = COALESCE(e.run_id, $28), updated_at = now()
       WHERE e.claimed_attempt < $29 AND ((SELECT may_send FROM may_send) OR NOT (SELECT open FROM open)) AND e.payload_removed_at IS NULL
      RETURNING accepted_at, claimed_attempt = $30 AS claimed, held_since IS NOT NULL AS held
    )
    SELECT (SELECT accepted_at FROM claim WHERE claimed) AS accepted_at, (SELECT may_send FROM may_send) AS may_send,
             (SELECT (extract(epoch FROM send_at - clock_timestamp()) * 1000)::float8 FROM slot) AS send_in_ms,
             (SELECT state FROM gate) AS state, (SELECT pause_reason FROM gate) AS pause_reason,
             (SELECT CASE WHEN next_send_at > clock_timestamp() THEN (extract(epoch FROM next_send_at - clock_timestamp()) * 1000)::float8 END FROM gate)
               AS next_send_in_ms,
           EXISTS (SELECT 1 FROM claim WHERE held) AS held,
           EXISTS (SELECT 1 FROM webhook_events WHERE id = $31::uuid AND payload_removed_at IS NOT NULL) AS erased;
