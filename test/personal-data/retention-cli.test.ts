import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { runCli } from '../support/cli';
import { useTestDatabase } from '../support/database';

const DAY = 86_400_000;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('partner-service retention status|run', function () {
  this.timeout(60_000);
  const db = useTestDatabase();
  const env = () => ({
    DATABASE_URL: db.url,
    TEMPORAL_TASK_QUEUE: 'retention-cli',
    WEBHOOK_PAYLOAD_RETENTION_DAYS: '7',
    WEBHOOK_LOG_RETENTION_DAYS: '30',
    AUDIT_RETENTION_DAYS: '30',
  });

  async function seed(status: string, finishedDaysAgo: number | null): Promise<string> {
    const id = randomUUID();
    const at = new Date(Date.now() - (finishedDaysAgo ?? 100) * DAY);
    await db.knex('webhook_events').insert({
      id,
      event_id: `cli-${id}`,
      event_type: 'candidate',
      action: 'new',
      company_id: 'acme',
      body: '{"data":{}}',
      workflow_id: `wf-${id}`,
      run_id: randomUUID(),
      status,
      accepted_at: at,
      created_at: at,
      finished_at: finishedDaysAgo === null ? null : at,
    });
    return id;
  }

  it('status before any run: the policy, the schedule, no stored body, no run', async () => {
    const result = await runCli(['retention', 'status'], env());
    assert.deepEqual([result.code, result.stderr], [0, '']);
    assert.deepEqual(JSON.parse(result.stdout), {
      payload_retention_days: 7,
      log_retention_days: 30,
      schedule: { id: 'webhook-retention-retention-cli', every: '1 hour' },
      oldest_stored_body: null,
      last_run: null,
    });
  });

  it('run purges what is due now and prints its counts; status then shows that run and the oldest body left', async () => {
    await seed('delivered', 31);
    await seed('failed', 40);
    await seed('failed', 8);
    const young = await seed('delivered', 2);
    await seed('pending', null);
    // Audit rows: one past AUDIT_RETENTION_DAYS (30), one within it.
    const auditRow = (daysAgo: number) => ({
      at: new Date(Date.now() - daysAgo * DAY),
      actor: 'ops-bot',
      action: 'partner.resume',
      target: 'retention-cli',
      parameters: {},
      outcome: 'succeeded',
    });
    await db.knex('audit_events').insert([auditRow(31), auditRow(29)]);

    const run = await runCli(['retention', 'run'], env());
    assert.deepEqual([run.code, run.stderr], [0, '']);
    const printed = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(printed), [
      'run_id',
      'trigger',
      'started_at',
      'finished_at',
      'payload_cutoff',
      'log_cutoff',
      'bodies_removed',
      'rows_deleted',
    ]);
    assert.deepEqual(
      { trigger: printed.trigger, bodies_removed: printed.bodies_removed, rows_deleted: printed.rows_deleted },
      { trigger: 'manual', bodies_removed: 1, rows_deleted: 2 },
    );
    for (const key of ['started_at', 'finished_at', 'payload_cutoff', 'log_cutoff'])
      assert.match(String(printed[key]), ISO, key);
    assert.equal(Date.parse(String(printed.started_at)) - Date.parse(String(printed.payload_cutoff)), 7 * DAY);
    assert.equal(Date.parse(String(printed.started_at)) - Date.parse(String(printed.log_cutoff)), 30 * DAY);
    const auditLeft = await db.knex('audit_events').where({ action: 'partner.resume' }).select('at');
    assert.equal(auditLeft.length, 1);
    assert.ok(Date.now() - auditLeft[0].at.getTime() < 30 * DAY, 'the audit row within AUDIT_RETENTION_DAYS stays');
    // The run is audited (intent, then outcome) and so is the audit rows' purge, with the new anchor.
    const lifecycle = await db
      .knex('audit_events')
      .whereNot({ action: 'partner.resume' })
      .orderBy('seq')
      .select('actor', 'action', 'phase', 'outcome', 'parameters');
    assert.deepEqual(
      lifecycle.map((r) => [r.action, r.phase, r.outcome]),
      [
        ['retention.run', 'intent', null],
        ['audit.purge', 'outcome', 'succeeded'],
        ['retention.run', 'outcome', 'succeeded'],
      ],
    );
    assert.ok(
      lifecycle.every((r) => /^cli:/.test(r.actor)),
      JSON.stringify(lifecycle),
    );
    assert.deepEqual([lifecycle[1].parameters.rows_removed, lifecycle[1].parameters.anchor_seq], [1, 1]);
    const verified = await runCli(['audit', 'verify'], env());
    assert.equal(verified.code, 0, verified.stdout);
    assert.equal(JSON.parse(verified.stdout).anchor.seq, 1);

    const status = await runCli(['retention', 'status'], env());
    assert.deepEqual([status.code, status.stderr], [0, '']);
    const shown = JSON.parse(status.stdout) as {
      oldest_stored_body: { finished_at: string; age_seconds: number };
      last_run: unknown;
    };
    assert.deepEqual(shown.last_run, printed);
    const youngRow = await db.knex('webhook_events').where({ id: young }).first('finished_at');
    assert.equal(shown.oldest_stored_body.finished_at, youngRow.finished_at.toISOString());
    assert.ok(
      Math.abs(shown.oldest_stored_body.age_seconds - 2 * 86_400) < 60,
      String(shown.oldest_stored_body.age_seconds),
    );

    // A second run finds nothing left that is due.
    const again = JSON.parse((await runCli(['retention', 'run'], env())).stdout) as Record<string, unknown>;
    assert.deepEqual([again.bodies_removed, again.rows_deleted], [0, 0]);
  });

  it('bad usage exits 2 with one line, then the usage', async () => {
    for (const [args, line] of [
      [['retention'], 'expected status or run'],
      [['retention', 'purge'], 'unknown subcommand "purge"'],
      [['retention', 'run', 'now'], 'run takes no arguments'],
    ] as const) {
      const result = await runCli([...args], env());
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stdout, '');
      assert.match(
        result.stderr,
        new RegExp(
          `^partner-service retention: ${line.replace(/"/g, '"')}\\n\\nUsage: partner-service retention status\\n`,
        ),
      );
    }
  });

  // loadConfig refuses these; `start` and `worker` stop before anything starts, with the CLI's exit code for an
  // invalid configuration (2, docs/cli.md) and one line.
  for (const command of ['start', 'worker']) {
    it(`${command} refuses a retention of 0 days, a negative one, a log retention shorter than the payload's, and a bad AUDIT_RETENTION_DAYS`, async () => {
      const cases = [
        [
          { WEBHOOK_PAYLOAD_RETENTION_DAYS: '0' },
          'Invalid configuration: WEBHOOK_PAYLOAD_RETENTION_DAYS must be at least 1',
        ],
        [
          { WEBHOOK_LOG_RETENTION_DAYS: '-5' },
          'Invalid configuration: WEBHOOK_LOG_RETENTION_DAYS must be a whole number',
        ],
        [
          { WEBHOOK_PAYLOAD_RETENTION_DAYS: '30', WEBHOOK_LOG_RETENTION_DAYS: '29' },
          'Invalid configuration: WEBHOOK_LOG_RETENTION_DAYS must be at least WEBHOOK_PAYLOAD_RETENTION_DAYS (a row outlives its body)',
        ],
        [{ AUDIT_RETENTION_DAYS: '0' }, 'Invalid configuration: AUDIT_RETENTION_DAYS must be at least 1'],
        [
          { AUDIT_RETENTION_DAYS: '29' },
          'Invalid configuration: AUDIT_RETENTION_DAYS must be at least 30: the database keeps every audit row that long (docs/access.md)',
        ],
        [{ AUDIT_RETENTION_DAYS: '1y' }, 'Invalid configuration: AUDIT_RETENTION_DAYS must be a whole number'],
      ] as const;
      for (const [settings, line] of cases) {
        const result = await runCli([command], { PATH: process.env.PATH, DATABASE_URL: db.url, ...settings });
        assert.deepEqual([result.code, result.stdout, result.stderr], [2, '', `${line}\n`], JSON.stringify(settings));
      }
    });
  }
});
