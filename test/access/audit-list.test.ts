// Reading the audit trail: GET /internal/v1/audit (scope read) and `partner-service audit list`, on a real
// PostgreSQL with rows put there directly: newest first, keyset-paged across rows one microsecond apart and
// rows at the very same time, filtered by since, actor and action, bad filters refused; and no way, through
// the API or SQL, to change a row.
import assert from 'node:assert/strict';
import { issueApiToken } from '../../lib/api-token';
import { AUDIT_ACTIONS, type TokenScope } from '../../lib/vocabulary';
import { insertApiToken } from '../../store/access/api-tokens';
import type { Knex } from '../../db/database';
import { runSourceCli } from '../support/cli';
import { startTestApi, type TestApi } from '../support/api';

const SHARED_TOKEN = 'audit-trail-shared-token-0123';

/** The rows, oldest first: two at the very same time, two one microsecond apart. */
const ROWS = [
  {
    at: '2026-11-20T10:00:00.000000Z',
    actor: 'ops-console',
    action: 'partner.pause',
    target: 'deliveries',
    parameters: { reason: 'partner maintenance' },
    outcome: 'succeeded',
    error: null,
    request_id: 'req-1',
  },
  {
    at: '2026-11-20T10:05:00.000001Z',
    actor: 'cli:alice@ops-1',
    action: 'partner.limit',
    target: 'deliveries',
    parameters: { max_per_second: 5 },
    outcome: 'succeeded',
    error: null,
    request_id: null,
  },
  {
    at: '2026-11-20T10:05:00.000002Z',
    actor: 'ops-console',
    action: 'webhook.cancel',
    target: '0e7c2a5e-8d0f-4c55-9a3b-2f4f3c1d9e01',
    parameters: {},
    outcome: 'failed',
    error: 'WebhookConflictError: the delivery has ended',
    request_id: 'req-2',
  },
  {
    at: '2026-11-21T08:00:00.000000Z',
    actor: 'INTERNAL_API_TOKEN',
    action: 'webhooks.redeliver',
    target: null,
    parameters: { status: 'failed', limit: 100 },
    outcome: 'succeeded',
    error: null,
    request_id: 'req-3',
  },
  {
    at: '2026-11-21T08:00:00.000000Z',
    actor: 'ops-console',
    action: 'partner.resume',
    target: 'deliveries',
    parameters: {},
    outcome: 'succeeded',
    error: null,
    request_id: 'req-4',
  },
  {
    at: '2026-11-22T09:30:00.123456Z',
    actor: 'cli:alice@ops-1',
    action: 'token.revoke',
    target: 'old-ingest',
    parameters: {},
    outcome: 'succeeded',
    error: null,
    request_id: null,
  },
] as const;

type Row = (typeof ROWS)[number];
/** What the chain gave each row: its place, operation id and hash, read back once the rows are in. */
const chained = new Map<number, { seq: number; operation_id: string; hash: string }>();
/** A row as the API shows it: with its id, its chain fields, its time in JSON (milliseconds). */
const shown = (row: Row, id: number) => ({
  id,
  ...row,
  ...chained.get(id),
  phase: 'outcome',
  outcome_recorded: true,
  at: new Date(row.at).toISOString(),
});
const ACTION_CHOICES = `must be one of ${AUDIT_ACTIONS.join(', ')}`;

describe('the audit trail: GET /internal/v1/audit and partner-service audit list', function () {
  this.timeout(60_000);
  let stack: TestApi;
  let knex: Knex;
  let ids: number[];
  const secrets: Partial<Record<string, string>> = {};

  async function createToken(db: Knex, name: string, scopes: TokenScope[]) {
    const issued = issueApiToken();
    assert.equal(
      await insertApiToken(db, {
        id: issued.id,
        name,
        scopes,
        hashed: issued.hashed,
        createdBy: 'test',
        expiresAt: null,
      }),
      true,
    );
    secrets[name] = issued.secret;
  }

  before(async () => {
    stack = await startTestApi({ INTERNAL_API_TOKEN: SHARED_TOKEN }, async (db) => {
      await createToken(db, 'auditor', ['read']);
      await createToken(db, 'ingester', ['ingest']);
      await createToken(db, 'operator', ['operate', 'erase']);
      ids = [];
      // One at a time, so the ids follow the list.
      for (const row of ROWS)
        ids.push(
          (
            (await db('audit_events')
              .insert({ ...row, parameters: JSON.stringify(row.parameters) })
              .returning('id')) as Array<{ id: number }>
          )[0].id,
        );
      const { rows } = await db.raw(`SELECT id, seq, operation_id, encode(hash, 'hex') AS hash FROM audit_events`);
      for (const { id, ...fields } of rows) chained.set(Number(id), { ...fields, seq: Number(fields.seq) });
    });
    knex = stack.db.knex;
  });

  after(() => stack?.close());

  const get = async (query: string, token = secrets.auditor) => {
    const response = await fetch(`${stack.api.url}/internal/v1/audit${query}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as { next: string | null; results: unknown[] } & Record<string, unknown>,
    };
  };
  /** The expected results, newest first: by time, then by id. */
  const newestFirst = (pick: (row: Row) => boolean) =>
    ROWS.map((row, i) => ({ row, id: ids[i] }))
      .filter(({ row }) => pick(row))
      .sort((a, b) => b.row.at.localeCompare(a.row.at) || b.id - a.id)
      .map(({ row, id }) => shown(row, id));

  it('answers every row newest first, each with all its fields, to a token with the scope read', async () => {
    const { status, body } = await get('');
    assert.equal(status, 200);
    assert.deepEqual(body, { next: null, results: newestFirst(() => true) });
    // Rows at the same time come by id, newest first; rows one microsecond apart keep their order.
    assert.deepEqual(
      body.results.map((r) => (r as { id: number }).id),
      [ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]],
    );
  });

  it('pages with next links, one row at a time, across equal times and single microseconds, without a row twice or missed', async () => {
    const seen: number[] = [];
    let url: string | null = `${stack.api.url}/internal/v1/audit?limit=1`;
    let pages = 0;
    while (url) {
      const response = await fetch(url, { headers: { authorization: `Bearer ${secrets.auditor}` } });
      assert.equal(response.status, 200);
      const page = (await response.json()) as { next: string | null; results: Array<{ id: number }> };
      assert.equal(page.results.length, 1);
      seen.push(page.results[0].id);
      if (page.next)
        assert.match(page.next, new RegExp(`^${stack.api.url}/internal/v1/audit\\?limit=1&cursor=[A-Za-z0-9_-]+$`));
      url = page.next;
      pages += 1;
    }
    assert.equal(pages, 6);
    assert.deepEqual(seen, [ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]]);
  });

  it('filters by since (inclusive), by actor (exactly), by action, and by all three', async () => {
    // A row at exactly `since` is in; one a millisecond earlier is not.
    assert.deepEqual(
      (await get('?since=2026-11-21T08:00:00Z')).body.results,
      newestFirst((r) => r.at >= '2026-11-21'),
    );
    assert.equal((await get('?since=2026-11-21T08:00:00Z')).body.results.length, 3);
    assert.deepEqual((await get('?since=2026-11-22T09:30:00.124Z')).body.results, []);
    assert.deepEqual(
      (await get('?actor=ops-console')).body.results,
      newestFirst((r) => r.actor === 'ops-console'),
    );
    assert.equal((await get('?actor=ops-console')).body.results.length, 3);
    assert.deepEqual((await get('?actor=ops')).body.results, []);
    assert.deepEqual(
      (await get(`?actor=${encodeURIComponent('cli:alice@ops-1')}`)).body.results,
      newestFirst((r) => r.actor === 'cli:alice@ops-1'),
    );
    assert.deepEqual(
      (await get('?action=partner.limit')).body.results,
      newestFirst((r) => r.action === 'partner.limit'),
    );
    const all3 = await get('?since=2026-11-20T10:01:00Z&actor=ops-console&action=webhook.cancel');
    assert.deepEqual(all3.body, { next: null, results: [shown(ROWS[2], ids[2])] });
    // A filter's next link keeps the filter.
    const paged = await get('?actor=ops-console&limit=2');
    assert.deepEqual(paged.body.results, newestFirst((r) => r.actor === 'ops-console').slice(0, 2));
    const rest = await fetch(paged.body.next!, { headers: { authorization: `Bearer ${secrets.auditor}` } });
    assert.deepEqual(await rest.json(), { next: null, results: [shown(ROWS[0], ids[0])] });
  });

  it('refuses bad filters and paging with 400 in the internal API format, one error per parameter', async () => {
    const refused = async (query: string, errors: Array<{ path: string; message: string }>) => {
      const { status, body } = await get(query);
      assert.equal(status, 400, query);
      assert.deepEqual(body, { detail: 'Invalid filter or paging.', errors }, query);
    };
    await refused('?since=yesterday', [
      { path: 'since', message: 'must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z' },
    ]);
    await refused('?since=2026-11-20T10:00:00', [
      { path: 'since', message: 'must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z' },
    ]);
    await refused('?action=partner.delete', [{ path: 'action', message: ACTION_CHOICES }]);
    await refused('?unsettled=yes', [{ path: 'unsettled', message: 'must be true or false' }]);
    await refused('?actor=', [{ path: 'actor', message: 'must not be empty' }]);
    await refused('?limit=0&outcome=failed', [
      { path: 'limit', message: 'must be at least 1' },
      { path: 'outcome', message: 'unknown field' },
    ]);
    await refused('?limit=501', [{ path: 'limit', message: 'must be at most 500' }]);
    await refused('?cursor=not-a-cursor', [{ path: 'cursor', message: 'is not a cursor this API gave out' }]);
    // A delivery log cursor is not an audit cursor.
    await refused(
      `?cursor=${Buffer.from(JSON.stringify(['1', '0e7c2a5e-8d0f-4c55-9a3b-2f4f3c1d9e01'])).toString('base64url')}`,
      [{ path: 'cursor', message: 'is not a cursor this API gave out' }],
    );
  });

  it('needs a token with the scope read: 401 without one, 403 naming the scope, the shared token reads', async () => {
    const none = await get('', '');
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="internal"');
    assert.deepEqual(none.body, { detail: 'Authentication credentials were not provided.' });
    const unknown = await get('', 'pis_00000000000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    assert.equal(unknown.status, 401);
    assert.deepEqual(unknown.body, { detail: 'Invalid token.' });
    for (const name of ['ingester', 'operator']) {
      const refused = await get('', secrets[name]);
      assert.equal(refused.status, 403, name);
      assert.deepEqual(refused.body, {
        detail: `The token "${name}" does not have the scope "read", which this request needs.`,
        reason: 'missing_scope',
      });
    }
    const shared = await get('', SHARED_TOKEN);
    assert.equal(shared.status, 200);
    assert.equal(shared.body.results.length, 6);
  });

  it('has no route that changes or deletes a row: every other method answers 405 with Allow', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const path of ['/internal/v1/audit', `/internal/v1/audit/${ids[0]}`]) {
        const response = await fetch(`${stack.api.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${SHARED_TOKEN}` },
        });
        if (path === '/internal/v1/audit') {
          assert.equal(response.status, 405, `${method} ${path}`);
          assert.equal(response.headers.get('allow'), 'HEAD, GET');
        } else {
          assert.equal(response.status, 404, `${method} ${path}`);
        }
      }
    }
    assert.equal(
      await knex('audit_events')
        .count({ n: '*' })
        .first()
        .then((r) => Number(r!.n)),
      6,
    );
  });

  it('refuses an UPDATE of a row through SQL, and the row stays as it was', async () => {
    await assert.rejects(
      knex.raw(`UPDATE audit_events SET outcome = 'failed', error = 'rewritten' WHERE id = ?`, [ids[0]]),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, '42501');
        assert.match(error.message, /audit_events rows are never changed$/);
        return true;
      },
    );
    await assert.rejects(
      knex.raw(`UPDATE audit_events SET actor = 'someone-else'`),
      /audit_events rows are never changed$/,
    );
    const [row] = await knex('audit_events').where({ id: ids[0] }).select('actor', 'outcome', 'error');
    assert.deepEqual(row, { actor: 'ops-console', outcome: 'succeeded', error: null });
  });

  describe('partner-service audit list', () => {
    const cli = (...args: string[]) =>
      runSourceCli(['audit', ...args], { DATABASE_URL: stack.db.url, LOG_LEVEL: 'error' });

    it('prints a page as JSON with next_cursor, filters as the API does, and follows --cursor to the end', async () => {
      const first = await cli('list', '--actor', 'ops-console', '--limit', '2');
      assert.equal(first.code, 0, first.stderr);
      const page = JSON.parse(first.stdout) as { next_cursor: string; results: unknown[] };
      assert.deepEqual(page.results, newestFirst((r) => r.actor === 'ops-console').slice(0, 2));
      assert.match(page.next_cursor, /^[A-Za-z0-9_-]+$/);
      const second = await cli('list', '--actor', 'ops-console', '--limit', '2', '--cursor', page.next_cursor);
      assert.equal(second.code, 0, second.stderr);
      assert.deepEqual(JSON.parse(second.stdout), { next_cursor: null, results: [shown(ROWS[0], ids[0])] });
      const filtered = await cli('list', '--since', '2026-11-21T00:00:00Z', '--action', 'token.revoke');
      assert.equal(filtered.code, 0, filtered.stderr);
      assert.deepEqual(JSON.parse(filtered.stdout), { next_cursor: null, results: [shown(ROWS[5], ids[5])] });
      const everything = await cli('list');
      assert.deepEqual(JSON.parse(everything.stdout), { next_cursor: null, results: newestFirst(() => true) });
    });

    it('answers a bad value with one line and exit 2', async () => {
      const badAction = await cli('list', '--action', 'partner.delete');
      assert.deepEqual({ code: badAction.code, stdout: badAction.stdout }, { code: 2, stdout: '' });
      assert.equal(badAction.stderr, `partner-service audit: action: ${ACTION_CHOICES}\n`);
      const badSince = await cli('list', '--since', 'last week', '--limit', '0');
      assert.equal(badSince.code, 2);
      assert.equal(
        badSince.stderr,
        'partner-service audit: since: must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z; limit: must be at least 1\n',
      );
      const badCursor = await cli('list', '--cursor', 'xyz');
      assert.equal(badCursor.code, 2);
      assert.equal(badCursor.stderr, 'partner-service audit: cursor: is not a cursor this API gave out\n');
    });

    it('answers an unknown flag or subcommand with exit 2 and its usage', async () => {
      const unknownFlag = await cli('list', '--outcome', 'failed');
      assert.equal(unknownFlag.code, 2);
      assert.equal(
        unknownFlag.stderr.split('\n')[0],
        "partner-service audit: Unknown option '--outcome'. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- \"--outcome\"",
      );
      const unknownSubcommand = await cli('show');
      assert.equal(unknownSubcommand.code, 2);
      assert.equal(unknownSubcommand.stderr.split('\n')[0], 'partner-service audit: unknown subcommand "show"');
    });
  });
});
