import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { createLogger } from '../../lib/logger';
import { loadConfig } from '../../lib/config';
import { DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../lib/at-rest';
import { subjectKey } from '../../lib/subject-index';
import { startApiServer } from '../../api/server';
import { createTemporalGateway } from '../../application/temporal-gateway';
import { eraseSubjectWebhooks } from '../../store/erasure-steps';
import { insertErasure } from '../../store/erasures';
import { quantiles } from '../harness/stats';
import { table, verdict } from '../harness/render';
import { benchTemporalBinary, startBenchTemporal } from '../harness/temporal';
import type { BenchmarkSuite } from '../harness/suite';

const ROWS = 1_000_000;
/** Each subject's key is on every SUBJECTS-th row: 1 row in 1,000. */
const SUBJECTS = 1000;
const REQUESTS = 200;
const WARM_UP = 10;
const GOAL_MS = 50;
const TOKEN = 'bench-erasure-internal-token';

export const erasureSuite: BenchmarkSuite = {
  name: 'erasure',
  title: 'Erasure on request',
  async run({ knex, databaseUrl, progress }) {
    const keys = Array.from({ length: SUBJECTS }, (_, i) => subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', `c-${i}`));
    progress(`erasure: seeding ${ROWS.toLocaleString('en')} delivered webhooks`);
    const seededAt = performance.now();
    await knex.raw(
      `INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, run_id, status, finished_at, subject_keys)
       SELECT gen_random_uuid(), 'bench-' || i, 'candidate', 'new', 'company-' || (i % 200),
              json_build_object('event_type', 'candidate', 'action', 'new', 'data', json_build_object('candidate', json_build_object('id', 'c-' || (i % ${SUBJECTS})))),
              'webhook-candidate-new-bench-' || i, 'run-' || i, 'delivered', now(), ARRAY[(?::text[])[i % ${SUBJECTS} + 1]]
         FROM generate_series(1, ${ROWS}) AS i`,
      [keys],
    );
    // The seed's own aftermath (autovacuum of a million new rows, a checkpoint) must not fall into the measurement.
    await knex.raw('VACUUM ANALYZE webhook_events');
    await knex.raw('CHECKPOINT');
    const seedSeconds = (performance.now() - seededAt) / 1000;

    const executable = benchTemporalBinary();
    const temporal = await startBenchTemporal(executable);
    const logger = createLogger('error');
    const config = loadConfig({ DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.server.address, INTERNAL_API_TOKEN: TOKEN, TEMPORAL_TASK_QUEUE: 'bench-erasure' });
    const gateway = createTemporalGateway(config, logger);
    const api = await startApiServer({ config, knex, logger, temporalGateway: gateway }, 0, '127.0.0.1');
    const latencies: number[] = [];
    const [load] = loadavg();
    try {
      progress(`erasure: ${REQUESTS} requests for distinct subjects (no worker: the answer does not wait for the erasure)`);
      for (let i = 0; i < WARM_UP + REQUESTS; i++) {
        const started = performance.now();
        const response = await fetch(`${api.url}/internal/v1/erasures`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ candidate_id: `c-${i}` }),
        });
        await response.json();
        if (response.status !== 202) throw new Error(`POST /internal/v1/erasures answered ${response.status}`);
        if (i >= WARM_UP) latencies.push(performance.now() - started);
      }
    } finally {
      await api.close();
      await gateway.close();
      await temporal.stop();
    }
    // The workflow's heaviest step, on the same table: one subject's 1,000 rows erased in one transaction.
    const erasureId = randomUUID();
    await insertErasure(knex, { id: erasureId, subjectKind: 'candidate_id', subjectKey: keys[SUBJECTS - 1], companyId: null, requestedBy: 'bench' });
    const erasingAt = performance.now();
    const counts = await eraseSubjectWebhooks(knex, erasureId);
    const erasingMs = performance.now() - erasingAt;

    const { p50, p95, p99 } = quantiles(latencies);
    const max = Math.max(...latencies);
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    return [
      `POST /internal/v1/erasures (the record written, the \`eraseSubject\` workflow started on a dev server) among ` +
        `${ROWS.toLocaleString('en')} webhook rows, each subject's key on 1 row in ${SUBJECTS.toLocaleString('en')} ` +
        `(seeded in ${seedSeconds.toFixed(0)} s with generate_series); ${REQUESTS} sequential requests for distinct candidates after ${WARM_UP} of warm-up, ` +
        `the API in the benchmark's process, no worker polling; the machine's 1-minute load average was ${load.toFixed(1)} at the start.`,
      '',
      table(['measure', '>value', 'goal'], [
        ['202 answer p50', ms(p50), ''],
        ['202 answer p95', ms(p95), ''],
        ['202 answer p99', ms(p99), `≤ ${GOAL_MS} ms: ${verdict(p99 <= GOAL_MS)}`],
        ['202 answer max', ms(max), ''],
        [`erasing transaction of one subject (${counts.webhooksFound.toLocaleString('en')} rows: runs recorded, bodies removed, keys emptied)`, ms(erasingMs), ''],
      ]),
    ].join('\n');
  },
};
