-- Written by test/webhooks/attempt-statements.test.ts; do not edit. Assembled by
-- store/webhooks/attempt-record.ts (recordStatement, with feedGate of store/partner/partner-gate.ts).
-- After a change to the statement: WRITE_SQL=1 npx mocha test/webhooks/attempt-statements.test.ts

-- The attempt's record, by the record activity (no final status, no feedback to the gate).
-- Prepared as `record-attempt`. Bound values of the test's example:
--   $1 = 'webhook-candidate-new-candidate-new-acme-c-77'
--   $2 = '0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'
--   $3 = '8f1d2c3b-4a5e-5f60-8172-93a4b5c6d7e8'
--   $4 = 1
--   $5 = '2026-01-02T03:04:05.000Z'
--   $6 = '2026-01-02T03:04:05.010Z'
--   $7 = 42
--   $8 = 200
--   $9 = NULL
--   $10 = NULL
--   $11 = 'ok'
--   $12 = NULL
--   $13 = NULL
--   $14 = true
--   $15 = 'schedule'
--   $16 = []
--   $17 = false
--   $18 = NULL
--   $19 = NULL
--   $20 = 0
--   $21 = NULL
--   $22 = 0
--   $23 = NULL
--   $24 = 0
--   $25 = 0
--   $26 = NULL
--   $27 = NULL
--   $28 = NULL
--   $29 = NULL
--   $30 = NULL
--   $31 = NULL
--   $32 = NULL

WITH row AS (
      UPDATE webhook_events SET workflow_id = COALESCE(webhook_events.workflow_id, $1), run_id = COALESCE(webhook_events.run_id, $2), updated_at = now() WHERE id = $3 RETURNING id, payload_removed_at IS NULL AS keeps_payload
    ), recorded AS (
      INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, error_class, error_message, response_body, response_body_sealed, response_body_key_id, succeeded, trigger, expired_links, is_test)
      SELECT id, $4::smallint, $5::timestamptz, $6::timestamptz, $7::integer, $8::smallint, $9::text, $10::text, CASE WHEN row.keeps_payload THEN $11::text END, CASE WHEN row.keeps_payload THEN $12::bytea END, CASE WHEN row.keeps_payload THEN $13::text END, $14::boolean, $15::text, $16::text[], $17::boolean FROM row
      ON CONFLICT (webhook_id, attempt) DO NOTHING
      RETURNING webhook_id
    ), fed AS (
      UPDATE partner_gate SET
         consecutive_failures = CASE WHEN $18::text = 'failing' THEN consecutive_failures + 1 ELSE 0 END,
         tripped_at = CASE WHEN (tripped_at IS NULL AND $19::text = 'failing' AND consecutive_failures + 1 >= $20::int) THEN now() ELSE tripped_at END,
         trips = trips + CASE WHEN (tripped_at IS NULL AND $21::text = 'failing' AND consecutive_failures + 1 >= $22::int) THEN 1 ELSE 0 END,
         probe_due_at = CASE WHEN (tripped_at IS NULL AND $23::text = 'failing' AND consecutive_failures + 1 >= $24::int) THEN now() + make_interval(secs => $25::float8) ELSE probe_due_at END,
         throttled_since = CASE WHEN $26::float8 IS NOT NULL AND (retry_after_until IS NULL OR retry_after_until <= now()) THEN now() ELSE throttled_since END,
         retry_after_until = CASE WHEN $27::float8 IS NULL THEN retry_after_until
                                  ELSE GREATEST(retry_after_until, now() + make_interval(secs => $28::float8)) END,
         updated_at = now()
       WHERE task_queue = $29 AND $30::text IS NOT NULL AND EXISTS (SELECT 1 FROM recorded)
         AND ($31::text = 'failing' OR consecutive_failures > 0 OR $32::float8 IS NOT NULL)
      RETURNING tripped_at = now() AS tripped, CASE WHEN throttled_since = now() THEN retry_after_until END AS throttled_until
    )
    SELECT count(*)::int AS found, (SELECT tripped FROM fed) AS tripped, (SELECT throttled_until FROM fed) AS throttled_until FROM row;

-- The attempt's record, by the attempt that ends the delivery, with its POST's feedback to the gate.
-- Prepared as `record-attempt-and-finish`. Bound values of the test's example:
--   $1 = 'webhook-candidate-new-candidate-new-acme-c-77'
--   $2 = '0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'
--   $3 = 'delivered'
--   $4 = '2026-01-02T03:04:05.060Z'
--   $5 = '8f1d2c3b-4a5e-5f60-8172-93a4b5c6d7e8'
--   $6 = 1
--   $7 = '2026-01-02T03:04:05.000Z'
--   $8 = '2026-01-02T03:04:05.010Z'
--   $9 = 42
--   $10 = 200
--   $11 = NULL
--   $12 = NULL
--   $13 = 'ok'
--   $14 = NULL
--   $15 = NULL
--   $16 = true
--   $17 = 'schedule'
--   $18 = []
--   $19 = false
--   $20 = 'answered'
--   $21 = 'answered'
--   $22 = 5
--   $23 = 'answered'
--   $24 = 5
--   $25 = 'answered'
--   $26 = 5
--   $27 = 30
--   $28 = NULL
--   $29 = NULL
--   $30 = NULL
--   $31 = 'partner-deliveries'
--   $32 = 'answered'
--   $33 = 'answered'
--   $34 = NULL

WITH row AS (
      UPDATE webhook_events SET workflow_id = COALESCE(webhook_events.workflow_id, $1), run_id = COALESCE(webhook_events.run_id, $2), updated_at = now(), status = CASE WHEN status_reason = 'erasure' THEN status ELSE $3::text END, finished_at = COALESCE(finished_at, $4::timestamptz) WHERE id = $5 RETURNING id, payload_removed_at IS NULL AS keeps_payload
    ), recorded AS (
      INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, error_class, error_message, response_body, response_body_sealed, response_body_key_id, succeeded, trigger, expired_links, is_test)
      SELECT id, $6::smallint, $7::timestamptz, $8::timestamptz, $9::integer, $10::smallint, $11::text, $12::text, CASE WHEN row.keeps_payload THEN $13::text END, CASE WHEN row.keeps_payload THEN $14::bytea END, CASE WHEN row.keeps_payload THEN $15::text END, $16::boolean, $17::text, $18::text[], $19::boolean FROM row
      ON CONFLICT (webhook_id, attempt) DO NOTHING
      RETURNING webhook_id
    ), fed AS (
      UPDATE partner_gate SET
         consecutive_failures = CASE WHEN $20::text = 'failing' THEN consecutive_failures + 1 ELSE 0 END,
         tripped_at = CASE WHEN (tripped_at IS NULL AND $21::text = 'failing' AND consecutive_failures + 1 >= $22::int) THEN now() ELSE tripped_at END,
         trips = trips + CASE WHEN (tripped_at IS NULL AND $23::text = 'failing' AND consecutive_failures + 1 >= $24::int) THEN 1 ELSE 0 END,
         probe_due_at = CASE WHEN (tripped_at IS NULL AND $25::text = 'failing' AND consecutive_failures + 1 >= $26::int) THEN now() + make_interval(secs => $27::float8) ELSE probe_due_at END,
         throttled_since = CASE WHEN $28::float8 IS NOT NULL AND (retry_after_until IS NULL OR retry_after_until <= now()) THEN now() ELSE throttled_since END,
         retry_after_until = CASE WHEN $29::float8 IS NULL THEN retry_after_until
                                  ELSE GREATEST(retry_after_until, now() + make_interval(secs => $30::float8)) END,
         updated_at = now()
       WHERE task_queue = $31 AND $32::text IS NOT NULL AND EXISTS (SELECT 1 FROM recorded)
         AND ($33::text = 'failing' OR consecutive_failures > 0 OR $34::float8 IS NOT NULL)
      RETURNING tripped_at = now() AS tripped, CASE WHEN throttled_since = now() THEN retry_after_until END AS throttled_until
    )
    SELECT count(*)::int AS found, (SELECT tripped FROM fed) AS tripped, (SELECT throttled_until FROM fed) AS throttled_until FROM row;
