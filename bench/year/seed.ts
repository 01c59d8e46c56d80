import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import candidateNew from '../../examples/events/candidate-new.json';
import companySignup from '../../examples/events/company-signup.json';
import jobNew from '../../examples/events/job-new.json';
import { envelopeBody, type WebhookEnvelope } from '../../events/envelope';
import { bodyBinding, DEVELOPMENT_INDEX_KEY, excerptBinding, sealText, type DataAtRest } from '../../lib/at-rest';
import { eventSubjectKeys } from '../../lib/subject-index';
import { raw, runSql, sql } from '../../db/sql';
import { laneDigest, laneKeyBinding } from '../../store/ordering/lanes';

/** A year's shape: rows spread over LOG_DAYS (the log's retention); bodies and excerpts kept for the last PAYLOAD_DAYS. */
export const [LOG_DAYS, PAYLOAD_DAYS, COMPANIES] = [90, 30, 50];
/** Rows sealed in Node and written by one INSERT … unnest. */
const BATCH = 5_000;
export const SEED_PREFIX = 'year-';

/**
 * Webhook `i` of `n` (0 oldest): its kind, company, candidate and shape of attempts, as the SQL below derives them too.
 * 50 % candidate/new, 40 % job/new, 10 % company/signup; 90 % delivered at the first try (the mix is a multiplicative hash of i, independent of the kind, i % 10, and the company, i / 10 % 50), 8 % after 2 to 4
 * attempts, 2 % failed after 4. One candidate in 20 webhooks, so each has about 10 at every size.
 */
const KIND_SQL = `CASE WHEN {i} % 10 < 5 THEN 'candidate' WHEN {i} % 10 < 9 THEN 'job' ELSE 'company' END`;
const ACTION_SQL = `CASE WHEN {i} % 10 < 9 THEN 'new' ELSE 'signup' END`;
const MIX_SQL = `(((({i})::bigint * 2654435761) % 4294967296) / 65536 % 100)`;
const ATTEMPTS_SQL = `CASE WHEN ${MIX_SQL} < 90 THEN 1 WHEN ${MIX_SQL} < 98 THEN 2 + {i} % 3 ELSE 4 END`;
/** Seconds after acceptance of attempt {a}: the 10 s, 100 s and 1000 s timers. */
const OFFSET_SQL = `(ARRAY[0, 10, 110, 1110])[{a}]`;
/** One of the expressions above for row `i` (and attempt `a`). */
const of = (expression: string, i: string, a = 'a') => expression.replaceAll('{i}', i).replaceAll('{a}', a);

const kindOf = (i: number) => (i % 10 < 5 ? 'candidate' : i % 10 < 9 ? 'job' : 'company');
export const candidateOf = (i: number, n: number) => `c-${i % Math.max(1, Math.floor(n / 20))}`;
/** i / 10, so that every company has webhooks of every kind (the kind is i % 10). */
export const companyOf = (i: number) => `company-${Math.floor(i / 10) % COMPANIES}`;

/** The body of webhook `i`: the example of its kind with its own ids (a candidate's e-mail is its own too); `candidate` forces a candidate event about `c-<candidate>`. */
function eventOf(i: number, n: number, candidateIndex?: number): WebhookEnvelope {
  const company = companyOf(i);
  if (candidateIndex === undefined && kindOf(i) === 'company')
    return { ...companySignup, data: { ...companySignup.data, company_id: company } } as WebhookEnvelope;
  if (candidateIndex === undefined && kindOf(i) === 'job')
    return {
      ...jobNew,
      data: {
        ...jobNew.data,
        company: { ...jobNew.data.company, id: company },
        job: { ...jobNew.data.job, id: `j-${i}` },
      },
    } as WebhookEnvelope;
  const candidate = candidateIndex === undefined ? candidateOf(i, n) : `c-${candidateIndex}`;
  const data = candidateNew.data;
  return {
    ...candidateNew,
    data: {
      ...data,
      company: { ...data.company, id: company },
      candidate: { ...data.candidate, id: candidate, email: `${candidate}@example.org` },
    },
  } as WebhookEnvelope;
}

export interface SeedFigures {
  readonly webhooks: number;
  readonly attempts: number;
  readonly sealedBodies: number;
  readonly auditRows: number;
  readonly seconds: number;
  readonly bytes: number;
}

/**
 * Seeds `n` finished webhooks of the last LOG_DAYS, as the service writes them: those older than PAYLOAD_DAYS with
 * their body and excerpts removed by retention (generate_series, in SQL), the newer ones with the body and each
 * excerpt sealed by the service's own sealing and bound to their row, and every candidate webhook with its
 * subject keys under the development index key (INSERT … unnest, from Node). Plus one audit row per 10
 * webhooks: operators' reads and retries, and a rare action.
 */
export async function seedYear(
  knex: Knex,
  n: number,
  atRest: DataAtRest,
  progress: (message: string) => void,
): Promise<SeedFigures> {
  const started = performance.now();
  const secondsApart = (LOG_DAYS * 86_400) / n;
  const recentFrom = Math.ceil(n * (1 - PAYLOAD_DAYS / LOG_DAYS));
  // Each candidate's subject keys once: the same for every webhook about it, old or new.
  const candidates = Math.max(1, Math.floor(n / 20));
  // Webhook 10c is about candidate c as long as 10c < n: a candidate kind (10c % 10 = 0) whose body names `c-<c>`.
  const keysOf = (c: number) => eventSubjectKeys(DEVELOPMENT_INDEX_KEY.key, eventOf(c, n, c));
  await knex.raw(
    'CREATE TEMP TABLE IF NOT EXISTS year_subjects (c int PRIMARY KEY, keys text[]) ON COMMIT PRESERVE ROWS',
  );
  for (let from = 0; from < candidates; from += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, candidates - from) }, (_, k) => from + k);
    await runSql(
      knex,
      sql`INSERT INTO year_subjects SELECT c, ARRAY(SELECT json_array_elements_text(k)) FROM unnest(${ids.map(String)}::int[], ${ids.map((c) => JSON.stringify(keysOf(c)))}::json[]) AS u(c, k) ON CONFLICT DO NOTHING`,
    );
  }
  const finishedAt = (i: string, t: string) =>
    `${t} + (${of(OFFSET_SQL, i, `(${of(ATTEMPTS_SQL, i)})`)} || ' seconds')::interval + interval '80 milliseconds'`;
  const columns = (i: string, t: string) => `
      '${SEED_PREFIX}' || ${i}, ${of(KIND_SQL, i)}, ${of(ACTION_SQL, i)}, 'company-' || ((${i}) / 10 % ${COMPANIES}),
      'webhook-${SEED_PREFIX}' || ${i}, 'run-${SEED_PREFIX}' || ${i}, CASE WHEN ${of(MIX_SQL, i)} < 98 THEN 'delivered' ELSE 'failed' END, true,
      ${t}, ${t}, ${finishedAt(i, t)}, ${finishedAt(i, t)},
      CASE WHEN ${i} % 10 < 5 THEN (SELECT keys FROM year_subjects WHERE c = ${i} % ${candidates}) ELSE '{}' END, 'development'`;
  const at = (i: string) => `now() - ((${n} - ${i}) * ${secondsApart}) * interval '1 second'`;
  const common =
    'event_id, event_type, action, company_id, workflow_id, run_id, status, start_reported, accepted_at, created_at, finished_at, updated_at, subject_keys, subject_key_id';
  progress(
    `year: seeding ${n.toLocaleString('en')} webhooks, ${recentFrom.toLocaleString('en')} of them past the payload retention`,
  );
  await runSql(
    knex,
    sql`INSERT INTO webhook_events (id, ${raw(common)}, payload_removed_at, payload_removed_reason)
      SELECT gen_random_uuid(), ${raw(columns('g', at('g')))}, ${raw(at('g'))} + interval '${raw(String(PAYLOAD_DAYS))} days', 'retention'
        FROM generate_series(0, ${recentFrom - 1}) AS g`,
  );
  await runSql(
    knex,
    sql`INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, succeeded, recorded_at)
      SELECT e.id, a, e.accepted_at + (${raw(of(OFFSET_SQL, '', 'a'))} || ' seconds')::interval, e.accepted_at + (${raw(of(OFFSET_SQL, '', 'a'))} || ' seconds')::interval, 80,
             CASE WHEN a = w.attempts AND e.status = 'delivered' THEN 200 ELSE 503 END, a = w.attempts AND e.status = 'delivered',
             e.accepted_at + (${raw(of(OFFSET_SQL, '', 'a'))} || ' seconds')::interval + interval '80 milliseconds'
        FROM webhook_events e, LATERAL (SELECT substr(e.event_id, ${SEED_PREFIX.length + 1})::int AS i) AS x,
             LATERAL (SELECT ${raw(of(ATTEMPTS_SQL, 'x.i'))} AS attempts) AS w, generate_series(1, w.attempts) AS a
       WHERE e.event_id LIKE ${`${SEED_PREFIX}%`} AND e.redelivery_of IS NULL`,
  );
  let sealedBodies = 0;
  for (let from = recentFrom; from < n; from += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, n - from) }, (_, k) => from + k);
    const ids = batch.map(() => randomUUID());
    const bodies = batch.map((i, k) => sealText(atRest, envelopeBody(eventOf(i, n)), bodyBinding(ids[k])));
    await runSql(
      knex,
      sql`INSERT INTO webhook_events (id, ${raw(common)}, body, body_sealed, body_key_id)
        SELECT u.id, ${raw(columns('u.i', at('u.i')))}, u.body::json, u.sealed, u.key_id
          FROM unnest(${ids}::uuid[], ${batch.map(String)}::int[], ${nullable(bodies.map((b) => b.clear))}::text[], ${nullable(bodies.map((b) => hex(b.sealed)))}::bytea[], ${nullable(bodies.map((b) => b.keyId))}::text[]) AS u(id, i, body, sealed, key_id)`,
    );
    const attempts = batch.flatMap((i, k) =>
      Array.from({ length: attemptsOf(i) }, (_, a) => ({ id: ids[k], i, a: a + 1, last: a + 1 === attemptsOf(i) })),
    );
    const excerpts = attempts.map(({ id, a, i, last }) =>
      sealText(atRest, last && delivered(i) ? '{"received":true}' : 'Service Unavailable', excerptBinding(id, a)),
    );
    await runSql(
      knex,
      sql`INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, succeeded, recorded_at, response_body, response_body_sealed, response_body_key_id)
        SELECT u.id, u.a, e.accepted_at + (${raw(of(OFFSET_SQL, '', 'u.a'))} || ' seconds')::interval, e.accepted_at + (${raw(of(OFFSET_SQL, '', 'u.a'))} || ' seconds')::interval, 80,
               CASE WHEN u.ok THEN 200 ELSE 503 END, u.ok, e.accepted_at + (${raw(of(OFFSET_SQL, '', 'u.a'))} || ' seconds')::interval + interval '80 milliseconds', u.clear, u.sealed, u.key_id
          FROM unnest(${attempts.map((x) => x.id)}::uuid[], ${attempts.map((x) => String(x.a))}::int[], ${attempts.map((x) => String(x.last && delivered(x.i)))}::boolean[],
                      ${nullable(excerpts.map((x) => x.clear))}::text[], ${nullable(excerpts.map((x) => hex(x.sealed)))}::bytea[], ${nullable(excerpts.map((x) => x.keyId))}::text[]) AS u(id, a, ok, clear, sealed, key_id)
          JOIN webhook_events e ON e.id = u.id`,
    );
    sealedBodies += batch.length;
    if ((from - recentFrom) % (BATCH * 40) === 0)
      progress(
        `year: ${(from - recentFrom + batch.length).toLocaleString('en')} of ${(n - recentFrom).toLocaleString('en')} recent webhooks sealed`,
      );
  }
  await seedLanes(knex, n, atRest);
  const auditRows = Math.floor(n / 10);
  // The trail's own trigger chains each row, updating one chain row: 1,000 rows a statement, since its cost in one
  // transaction grows with the square of the rows. One in 100 is the rare action the list is filtered by.
  for (let from = 1; from <= auditRows; from += 1_000) {
    await runSql(
      knex,
      sql`INSERT INTO audit_events (at, actor, action, target, parameters, outcome, phase)
        SELECT now() - ((${auditRows} - g) * ${(LOG_DAYS * 86_400) / auditRows}::float8) * interval '1 second', 'operator-' || (g % 20),
               CASE WHEN g % 100 = 0 THEN 'partner.pause' WHEN g % 2 = 0 THEN 'webhook.retry_now' ELSE 'webhooks.redeliver' END, NULL, '{}', 'succeeded', 'outcome'
          FROM generate_series(${from}::int, ${Math.min(auditRows, from + 999)}::int) AS g`,
    );
  }
  progress('year: VACUUM ANALYZE and CHECKPOINT');
  await knex.raw('VACUUM ANALYZE webhook_events, webhook_attempts, audit_events, ordering_lanes, ordering_places');
  await knex.raw('CHECKPOINT');
  const [{ webhooks, attempts, bytes }] = await runSql<{ webhooks: number; attempts: number; bytes: string }>(
    knex,
    sql`SELECT (SELECT count(*)::int FROM webhook_events) AS webhooks, (SELECT count(*)::int FROM webhook_attempts) AS attempts, pg_database_size(current_database()) AS bytes`,
  );
  return {
    webhooks,
    attempts,
    sealedBodies,
    auditRows,
    seconds: (performance.now() - started) / 1000,
    bytes: Number(bytes),
  };
}

/**
 * Each candidate's lane (key `candidate:c-<c>`, sealed as the service seals it) with its subject keys, and each
 * candidate webhook's settled place in it, in the order accepted: what WEBHOOK_ORDERING=entity leaves behind.
 */
async function seedLanes(knex: Knex, n: number, atRest: DataAtRest): Promise<void> {
  const candidates = Math.max(1, Math.floor(n / 20));
  await knex.raw(
    'CREATE TEMP TABLE IF NOT EXISTS year_lanes (c int PRIMARY KEY, lane_id bigint) ON COMMIT PRESERVE ROWS',
  );
  for (let from = 0; from < candidates; from += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, candidates - from) }, (_, k) => from + k);
    const digests = ids.map((c) => laneDigest(DEVELOPMENT_INDEX_KEY, `candidate:c-${c}`));
    const keys = ids.map((c, k) => sealText(atRest, `candidate:c-${c}`, laneKeyBinding(digests[k])));
    await runSql(
      knex,
      sql`WITH u AS (SELECT * FROM unnest(${ids.map(String)}::int[], ${digests.map((d) => hex(d)!)}::bytea[], ${nullable(keys.map((x) => x.clear))}::text[],
                                         ${nullable(keys.map((x) => hex(x.sealed)))}::bytea[], ${nullable(keys.map((x) => x.keyId))}::text[]) AS u(c, digest, clear, sealed, key_id)),
        lanes AS (INSERT INTO ordering_lanes (key_digest, key_text, key_sealed, key_key_id, index_key_id)
                  SELECT digest, clear, sealed, key_id, ${DEVELOPMENT_INDEX_KEY.id} FROM u RETURNING id, key_digest)
        INSERT INTO year_lanes SELECT u.c, lanes.id FROM u JOIN lanes ON lanes.key_digest = u.digest`,
    );
  }
  await runSql(
    knex,
    sql`INSERT INTO ordering_lane_subjects (subject_key, lane_id, key_id)
      SELECT DISTINCT s.key, yl.lane_id, ${DEVELOPMENT_INDEX_KEY.id} FROM year_lanes yl JOIN year_subjects ys USING (c), unnest(ys.keys) AS s(key)`,
  );
  await runSql(
    knex,
    sql`INSERT INTO ordering_places (webhook_id, lane_id, seq, settled_at)
      SELECT e.id, yl.lane_id, row_number() OVER (PARTITION BY yl.lane_id ORDER BY e.created_at), e.finished_at
        FROM webhook_events e JOIN year_lanes yl ON yl.c = substr(e.event_id, ${SEED_PREFIX.length + 1})::int % ${candidates}
       WHERE e.event_id LIKE ${`${SEED_PREFIX}%`} AND e.event_type = 'candidate'`,
  );
  await knex.raw(
    'UPDATE ordering_lanes l SET last_seq = p.last FROM (SELECT lane_id, max(seq) AS last FROM ordering_places GROUP BY lane_id) p WHERE p.lane_id = l.id',
  );
}

const mix = (i: number) => Math.floor(((i * 2654435761) % 4294967296) / 65536) % 100;
const delivered = (i: number) => mix(i) < 98;
const attemptsOf = (i: number) => (mix(i) < 90 ? 1 : mix(i) < 98 ? 2 + (i % 3) : 4);
const hex = (bytes: Buffer | null) => (bytes ? `\\x${bytes.toString('hex')}` : null);
/** An array with nulls, as pg sends one (NULL elements); db/sql's type lists only arrays of strings. */
const nullable = (values: ReadonlyArray<string | null>) => values as readonly string[];
