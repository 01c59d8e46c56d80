// The audit trail's hash chain (db/migrations/020_verifiable_audit.ts, application/access/audit-verify.ts), on a real
// PostgreSQL and the real API, with the built CLI:
// - a trail made by the API and the CLI verifies, and GET /internal/v1/audit/verify answers what the command prints;
// - the service's own role cannot UPDATE, DELETE or TRUNCATE the trail, nor move its ends, nor purge young rows;
// - the retention purge keeps it verifiable (its own audit.purge row names the new anchor); then, as the
//   PostgreSQL superuser with the triggers off, one row deleted, one edited and two swapped: `audit verify`
//   names each, with its position, and exits 1;
// - a purge stops at a tampered row rather than remove the evidence;
// - two purges at once: each counts only the rows it removed, neither stops at a false blocked row;
// - 16 callers, 8 through the API and 8 through the CLI's own code, 50 actions each at once: one chain, every row.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { auditedChange } from '../../application/access/audit';
import type { ChainReport } from '../../application/access/audit-verify';
import { main } from '../../cli/main';
import { issueApiToken } from '../../lib/api-token';
import { insertApiToken } from '../../store/access/api-tokens';
import { purgeDueAuditEvents } from '../../store/personal-data/retention-purge';
import { resetAuditTrail } from '../support/audit-trail';
import { startTestApi, type TestApi } from '../support/api';
import { runCli } from '../support/cli';
import { eventually } from '../support/eventually';

const DAY = 86_400_000;
const NEVER_CHANGED = /audit_events rows are never changed$/;
const NEVER_DELETED = /audit_events rows are never deleted, except the oldest by the retention purge$/;

describe('the audit trail as a hash chain: verify, refusals, purge, tampering, concurrent writers', function () {
  this.timeout(300_000);
  /** The named tokens' secrets, by name. */
  const secrets = new Map<string, string>();
  let stack: TestApi;

  before(async () => {
    stack = await startTestApi({}, async (db) => {
      for (const [name, scopes] of [
        ['chain-reader', ['read']],
        ['chain-operator', ['operate']],
      ] as const) {
        const issued = issueApiToken();
        await insertApiToken(db, {
          id: issued.id,
          name,
          scopes: [...scopes],
          hashed: issued.hashed,
          createdBy: 'test',
          expiresAt: null,
        });
        secrets.set(name, issued.secret);
      }
    });
  });
  after(() => stack?.close());
  beforeEach(() => resetAuditTrail(stack.db.knex));

  const knex = () => stack.db.knex;
  const env = () => ({
    PATH: process.env.PATH,
    DATABASE_URL: stack.db.url,
    TEMPORAL_TASK_QUEUE: 'audit-chain',
    AUDIT_RETENTION_DAYS: '30',
    LOG_LEVEL: 'error',
  });
  const cli = (...args: string[]) => runCli(args, env());
  const cliVerify = async () => {
    const result = await cli('audit', 'verify');
    assert.equal(result.stderr, '');
    return { code: result.code, report: JSON.parse(result.stdout) as ChainReport };
  };
  const apiVerify = async () => {
    const response = await fetch(`${stack.api.url}/internal/v1/audit/verify`, {
      headers: { authorization: `Bearer ${secrets.get('chain-reader')}` },
    });
    assert.equal(response.status, 200);
    return (await response.json()) as ChainReport;
  };
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${stack.api.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${secrets.get('chain-operator')}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  /** One operator change through the application, as the API and the CLI make them. */
  const change = (n: number) =>
    auditedChange(
      knex(),
      { actor: 'chain-test' },
      { action: 'partner.limit', target: 'audit-chain', parameters: { max_per_second: n } },
      async () => {},
    );
  /** An audit row made `days` ago, written by the service's own INSERT (the trigger chains it). */
  const oldRow = (days: number) =>
    knex()('audit_events').insert({
      at: new Date(Date.now() - days * DAY),
      actor: 'chain-test',
      action: 'partner.pause',
      target: 'audit-chain',
      parameters: { reason: `old ${days}` },
      outcome: 'succeeded',
    });
  /** As the PostgreSQL superuser with every trigger off: the tampering a chain must reveal. */
  const tamper = (statements: string[]) =>
    knex().transaction(async (trx) => {
      await trx.raw('SET LOCAL session_replication_role = replica');
      for (const statement of statements) await trx.raw(statement);
    });

  it('verifies a trail made through the API and the CLI, and the API answers exactly what the command prints', async () => {
    assert.equal((await call('POST', '/internal/v1/partner/pause', { reason: 'chain' })).status, 200);
    assert.equal((await call('POST', '/internal/v1/partner/resume')).status, 200);
    assert.equal((await call('POST', `/internal/v1/webhooks/${randomUUID()}/cancel`)).status, 404);
    assert.equal((await cli('partner', 'limit', '4')).code, 0);
    assert.equal((await cli('tokens', 'create', '--name', 'chain-extra', '--scope', 'read')).code, 0);
    const { code, report } = await cliVerify();
    assert.equal(code, 0);
    // pause, resume, the cancel's intent and its failed outcome, limit, token.create.
    assert.deepEqual(
      { ...report, head: { seq: report.head.seq } },
      {
        intact: true,
        rows: 6,
        anchor: { seq: 0, hash: '0'.repeat(64) },
        head: { seq: 6 },
        first_problem: null,
        problems: [],
        problems_total: 0,
      },
    );
    assert.deepEqual(await apiVerify(), report);
    const head = await knex()('audit_events').where({ seq: 6 }).first('hash');
    assert.equal(report.head.hash, head.hash.toString('hex'));
  });

  it("refuses UPDATE, DELETE and TRUNCATE by the service's own role, a hand-made purge of young rows, and any write to the chain's ends", async () => {
    for (let n = 1; n <= 3; n += 1) await change(n);
    const refusedWith = async (statement: string, pattern: RegExp) =>
      assert.rejects(knex().raw(statement), (error: Error & { code?: string }) => {
        assert.equal(error.code, '42501', statement);
        assert.match(error.message, pattern, statement);
        return true;
      });
    await refusedWith('DELETE FROM audit_events', NEVER_DELETED);
    await refusedWith('DELETE FROM audit_events WHERE seq = 3', NEVER_DELETED);
    await refusedWith('TRUNCATE audit_events', NEVER_CHANGED);
    await refusedWith(`UPDATE audit_events SET actor = 'someone-else' WHERE seq = 2`, NEVER_CHANGED);
    await refusedWith(
      `UPDATE audit_chain SET anchor_seq = 2`,
      /audit_chain is written only by the audit trail's own triggers/,
    );
    await refusedWith('DELETE FROM audit_chain', /audit_chain is written only/);
    await refusedWith('TRUNCATE audit_chain', /audit_chain is written only/);
    // The purge's switch set by hand still removes no row younger than 30 days.
    await assert.rejects(
      knex().transaction(async (trx) => {
        await trx.raw(`SET LOCAL partner_service.audit_purge = 'on'`);
        await trx.raw('DELETE FROM audit_events WHERE seq = 1');
      }),
      /the audit purge removes only the oldest row, intact and chained to the anchor, and none younger than 30 days \(seq 1\)/,
    );
    // The purge function itself, asked for everything up to now, keeps the young rows.
    const [{ removed }] = (await knex().raw(`SELECT * FROM purge_audit_events(now(), 100)`)).rows;
    assert.equal(removed, 0);
    assert.equal(Number((await knex()('audit_events').count({ n: '*' }))[0].n), 3);
    assert.equal((await cliVerify()).code, 0);
  });

  it('keeps the chain verifiable through the retention purge, then names a deleted, an edited and two swapped rows with their positions', async () => {
    for (const days of [400, 300, 200, 100, 31]) await oldRow(days);
    for (let n = 1; n <= 8; n += 1) await change(n);
    const run = await cli('retention', 'run');
    assert.equal(run.code, 0, run.stderr);
    // The purge removed the 5 old rows and said so in its own row: who, how many, the new anchor.
    const purge = await knex()('audit_events').where({ action: 'audit.purge' }).first('actor', 'parameters');
    assert.match(purge.actor, /^cli:/);
    const anchorRow = { seq: 5, hash: purge.parameters.anchor_hash as string };
    assert.deepEqual([purge.parameters.rows_removed, purge.parameters.anchor_seq], [5, 5]);
    const purged = await cliVerify();
    assert.equal(purged.code, 0, JSON.stringify(purged.report));
    // 8 changes, the run's intent and outcome, the purge's row.
    assert.deepEqual([purged.report.intact, purged.report.rows, purged.report.anchor], [true, 11, anchorRow]);
    assert.deepEqual(await apiVerify(), purged.report);

    // Rows 6 to 16 are left. Delete 8, edit 10, swap 12 and 13.
    await tamper([
      'DELETE FROM audit_events WHERE seq = 8',
      `UPDATE audit_events SET actor = 'someone-else' WHERE seq = 10`,
      'UPDATE audit_events SET seq = -1 WHERE seq = 12',
      'UPDATE audit_events SET seq = 12 WHERE seq = 13',
      'UPDATE audit_events SET seq = 13 WHERE seq = -1',
    ]);
    const broken = await cliVerify();
    assert.equal(broken.code, 1);
    const named = broken.report.problems.map(({ kind, position }) => [kind, position]);
    assert.deepEqual(named, [
      ['missing', 8],
      ['edited', 10],
      ['reordered', 12],
      ['reordered', 13],
    ]);
    assert.deepEqual(
      [broken.report.intact, broken.report.problems_total, broken.report.first_problem?.kind],
      [false, 4, 'missing'],
    );
    assert.equal(broken.report.problems[0].detail, 'row 8 is missing: deleted outside the purge');
    assert.match(
      broken.report.problems[1].detail,
      /^row 10 \(id \d+\) does not match its hash: its content was changed$/,
    );
    assert.match(broken.report.problems[2].detail, /^rows 12 \(id \d+\) and 13 \(id \d+\) are in each other's place$/);
    assert.deepEqual(await apiVerify(), broken.report);
  });

  it('names rows removed outside the purge at either end, and an anchor moved without a purge row', async () => {
    for (let n = 1; n <= 4; n += 1) await change(n);
    await tamper(['DELETE FROM audit_events WHERE seq IN (1, 4)']);
    const { code, report } = await cliVerify();
    assert.equal(code, 1);
    assert.deepEqual(
      report.problems.map(({ kind, position }) => [kind, position]),
      [
        ['missing', 1],
        ['missing', 4],
      ],
    );
    assert.equal(report.problems[1].detail, 'row 4 (the head) is missing: the newest rows were deleted');
    await resetAuditTrail(knex());
    for (let n = 1; n <= 3; n += 1) await change(n);
    await tamper([
      'DELETE FROM audit_events WHERE seq = 1',
      `UPDATE audit_chain SET anchor_seq = 1, anchor_hash = (SELECT prev_hash FROM audit_events WHERE seq = 2)`,
    ]);
    const moved = await cliVerify();
    assert.deepEqual(
      moved.report.problems.map(({ kind, position }) => [kind, position]),
      [['anchor_unrecorded', 1]],
    );
  });

  it('stops the purge at a tampered row, so the purge never removes the evidence', async () => {
    for (const days of [400, 300, 200, 100, 90]) await oldRow(days);
    await change(1);
    await tamper([`UPDATE audit_events SET parameters = '{"reason": "rewritten"}' WHERE seq = 3`]);
    const purge = await purgeDueAuditEvents(knex(), new Date(Date.now() - 30 * DAY), 'chain-test');
    assert.deepEqual([purge.removed, purge.anchorSeq, purge.blockedAt], [2, 2, 3]);
    const { code, report } = await cliVerify();
    assert.equal(code, 1);
    assert.deepEqual(
      report.problems.map(({ kind, position }) => [kind, position]),
      [['edited', 3]],
    );
  });

  it('counts, in two purges at once, only the rows each removed, and records no false blocked row', async () => {
    for (const days of [400, 300, 200, 100, 90]) await oldRow(days);
    const cutoff = new Date(Date.now() - 30 * DAY);
    /** The second purge, waiting for the first's transaction (pg_stat_activity says it waits on a lock). */
    const waiting = () =>
      eventually('the second purge waiting for the first', async () => {
        const { rows } = await knex().raw(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
        );
        return rows[0].n === 1;
      });
    let second: Promise<Awaited<ReturnType<typeof purgeDueAuditEvents>>> | undefined;
    // The first purge takes 3 of the 5 due rows and holds its transaction open while the second one starts.
    const first = await knex().transaction(async (trx) => {
      const purge = await purgeDueAuditEvents(trx, cutoff, 'purge-a', 3);
      second = purgeDueAuditEvents(knex(), cutoff, 'purge-b');
      await waiting();
      return purge;
    });
    const other = await second!;
    assert.deepEqual([first.removed, first.anchorSeq, first.blockedAt], [3, 3, null]);
    assert.deepEqual([other.removed, other.anchorSeq, other.blockedAt], [2, 5, null]);
    const recorded = await knex()('audit_events')
      .where({ action: 'audit.purge' })
      .orderBy('seq')
      .select('actor', 'parameters');
    assert.deepEqual(
      recorded.map((r: { actor: string; parameters: { rows_removed: number; anchor_seq: number } }) => [
        r.actor,
        r.parameters.rows_removed,
        r.parameters.anchor_seq,
      ]),
      [
        ['purge-a', 3, 3],
        ['purge-b', 2, 5],
      ],
    );
    const { code, report } = await cliVerify();
    assert.equal(code, 0, JSON.stringify(report));

    // Two whole purges started together: between them every due row is removed once, and counted once.
    await resetAuditTrail(knex());
    for (let n = 0; n < 40; n += 1) await oldRow(400 - n);
    const both = await Promise.all([
      purgeDueAuditEvents(knex(), cutoff, 'purge-c', 7),
      purgeDueAuditEvents(knex(), cutoff, 'purge-d', 7),
    ]);
    assert.deepEqual([both[0].removed + both[1].removed, both[0].blockedAt, both[1].blockedAt], [14, null, null]);
    assert.equal(Number((await knex()('audit_events').whereNot({ action: 'audit.purge' }).count({ n: '*' }))[0].n), 26);
  });

  it('refuses AUDIT_RETENTION_DAYS below 30 with one line and exit 2', async () => {
    const result = await runCli(['retention', 'run'], { ...env(), AUDIT_RETENTION_DAYS: '29' });
    assert.deepEqual(
      [result.code, result.stdout, result.stderr],
      [
        2,
        '',
        'Invalid configuration: AUDIT_RETENTION_DAYS must be at least 30: the database keeps every audit row that long (docs/access.md)\n',
      ],
    );
  });

  it('keeps one chain under 16 concurrent callers (8 through the API, 8 through the CLI), 50 actions each: no deadlock, no lost row', async () => {
    const CALLERS = 8;
    const ACTIONS = 50;
    // Through the API: a cap, then a cancel of an unknown webhook (an intent and a failed outcome), in turn.
    const apiCaller = async (caller: number) => {
      for (let i = 0; i < ACTIONS; i += 1) {
        const response =
          i % 2 === 0
            ? await call('POST', '/internal/v1/partner/limit', { max_per_second: caller * 100 + i + 1 })
            : await call('POST', `/internal/v1/webhooks/${randomUUID()}/cancel`);
        assert.equal(response.status, i % 2 === 0 ? 200 : 404);
      }
    };
    // Through the CLI's own code (main, each run with its own configuration, pool and actor), in this process:
    // 400 CLI processes would take minutes on this machine's two cores.
    const cliCaller = async (caller: number) => {
      for (let i = 0; i < ACTIONS; i += 1) {
        const args =
          i % 3 === 0
            ? ['partner', 'pause', '--reason', `caller ${caller} action ${i}`]
            : i % 3 === 1
              ? ['partner', 'resume']
              : ['partner', 'limit', String(caller * 100 + i + 1)];
        assert.equal(await main(args), 0, args.join(' '));
      }
    };
    const saved = { ...process.env };
    const write = process.stdout.write;
    let printed = 0;
    Object.assign(process.env, env());
    process.stdout.write = (chunk: string | Uint8Array) => {
      printed += String(chunk).split('\n').length - 1;
      return true;
    };
    const started = Date.now();
    try {
      await Promise.all([
        ...Array.from({ length: CALLERS }, (_, c) => apiCaller(c)),
        ...Array.from({ length: CALLERS }, (_, c) => cliCaller(c)),
      ]);
    } finally {
      process.stdout.write = write;
      process.env = saved;
    }
    const elapsed = Date.now() - started;
    assert.equal(printed, CALLERS * ACTIONS, 'every CLI action printed its result');
    // API: 25 limits (one row each) and 25 cancels (intent and outcome) per caller; CLI: 50 rows per caller.
    const expected = CALLERS * (25 + 25 * 2) + CALLERS * ACTIONS;
    const rows = await knex()('audit_events').orderBy('seq').select('seq', 'actor', 'phase');
    assert.equal(rows.length, expected);
    assert.deepEqual(
      rows.map((r) => Number(r.seq)),
      Array.from({ length: expected }, (_, i) => i + 1),
    );
    assert.equal(rows.filter((r) => r.actor === 'chain-operator').length, CALLERS * 75);
    assert.equal(rows.filter((r) => /^cli:/.test(r.actor)).length, CALLERS * ACTIONS);
    const { code, report } = await cliVerify();
    assert.deepEqual([code, report.intact, report.rows], [0, true, expected]);
    console.log(
      `      ${CALLERS * 2} callers, ${CALLERS * 2 * ACTIONS} actions, ${expected} audit rows in ${elapsed} ms; the chain verifies`,
    );
  });
});
