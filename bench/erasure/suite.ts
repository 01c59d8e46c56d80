import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { createLogger } from '../../lib/logger';
import { loadConfig } from '../../lib/config';
import { DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../lib/at-rest';
import { subjectKey } from '../../lib/subject-index';
import { startApiServer } from '../../api/server';
import { createTemporalGateway } from '../../temporal/gateway';
import { eraseSubjectWebhooks } from '../../store/personal-data/erasure-steps';
import { insertErasure } from '../../store/personal-data/erasures';
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
    const keys = Array.from({ length: SUBJECTS }, (_, i) =>
      subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', `c-${i}`)!,
    );
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
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.server.address,
      INTERNAL_API_TOKEN: TOKEN,
      TEMPORAL_TASK_QUEUE: 'bench-erasure',
    });
    const gateway = createTemporalGateway(config, logger);
    const api = await startApiServer({ config, knex, logger, temporalGateway: gateway }, 0, '127.0.0.1');
    // Each request is followed by a bare start of the same workflow through the same gateway, so both meet the same load.
    const route: number[] = [];
    const bare: number[] = [];
    const timed = async (work: () => Promise<unknown>) =>
      ((started) => work().then(() => performance.now() - started))(performance.now());
    const [load] = loadavg();
    try {
      progress(
        `erasure: ${REQUESTS} requests for distinct subjects, each with a bare start beside it (no worker: nothing waits for an erasure)`,
      );
      for (let i = 0; i < WARM_UP + REQUESTS; i++) {
        const post = await timed(async () => {
          const init = {
            method: 'POST',
            headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ candidate_id: `c-${i}` }),
          };
          const response = await fetch(`${api.url}/internal/v1/erasures`, init);
          if (response.status !== 202)
            throw new Error(`POST /internal/v1/erasures answered ${response.status}: ${await response.text()}`);
          await response.json();
        });
        const start = await timed(() => gateway.startErasure(randomUUID()));
        if (i < WARM_UP) continue;
        route.push(post);
        bare.push(start);
      }
    } finally {
      await api.close();
      await gateway.close();
      await temporal.stop();
    }
    // The workflow's heaviest step, on the same table: one subject's 1,000 rows erased in one transaction.
    const erasureId = randomUUID();
    await insertErasure(knex, {
      id: erasureId,
      subjectKind: 'candidate_id',
      subjectKeys: [keys[SUBJECTS - 1]],
      keyIds: ['development'],
      companyId: null,
      requestedBy: 'bench',
    });
    const erasingAt = performance.now();
    const counts = await eraseSubjectWebhooks(knex, erasureId);
    const erasingMs = performance.now() - erasingAt;

    const [api202, alone] = [route, bare].map((values) => ({ ...quantiles(values), max: Math.max(...values) }));
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    return [
      `POST /internal/v1/erasures (the record written, the \`eraseSubject\` workflow started on a dev server) among ` +
        `${ROWS.toLocaleString('en')} webhook rows, each subject's key on 1 row in ${SUBJECTS.toLocaleString('en')} ` +
        `(seeded in ${seedSeconds.toFixed(0)} s with generate_series); ${REQUESTS} sequential requests for distinct candidates after ${WARM_UP} of warm-up, ` +
        `the API in the benchmark's process, no worker polling; beside each, the gateway's bare start of the same workflow (no HTTP, ` +
        `no PostgreSQL). The machine's 1-minute load average was ${load.toFixed(1)} at the start.`,
      '',
      table(
        ['measure', '>POST, 202', '>the start alone', 'goal'],
        [
          ...(['p50', 'p95', 'p99', 'max'] as const).map((q) => [
            q,
            ms(api202[q]),
            ms(alone[q]),
            q === 'p99' ? `202 ≤ ${GOAL_MS} ms: ${verdict(api202.p99 <= GOAL_MS)}` : '',
          ]),
          [
            `one subject's erasing transaction (${counts.webhooksFound.toLocaleString('en')} rows: runs recorded, bodies removed, keys emptied)`,
            ms(erasingMs),
            '',
            '',
          ],
        ],
      ),
    ].join('\n');
  },
};
