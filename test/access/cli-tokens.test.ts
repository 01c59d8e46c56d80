// `partner-service tokens`: create prints the token once, list never shows it, revoke keeps the row; bad input
// exits 2 with one line and writes no token and no 'succeeded' audit row.
import assert from 'node:assert/strict';
import { cliActor } from '../../lib/actor';
import { apiTokenId } from '../../lib/api-token';
import { runSourceCli } from '../support/cli';
import { useTestDatabase } from '../support/database';

describe('partner-service tokens', function () {
  this.timeout(120_000);
  const db = useTestDatabase();
  const tokens = (...args: string[]) => runSourceCli(['tokens', ...args], { DATABASE_URL: db.url });
  const auditRows = () =>
    db.knex('audit_events').select('actor', 'action', 'target', 'parameters', 'outcome', 'error').orderBy('id');
  const tokenRows = () => db.knex('api_tokens').select('name', 'revoked_at', 'revoked_by').orderBy('name');

  it('creates a token, prints it once with its name and scopes, lists it without a secret, and revokes it', async () => {
    const before = Date.now();
    const created = await tokens('create', '--name', 'ats-upstream', '--scope', 'read,ingest', '--expires-in', '90d');
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.stderr, 'Store the token now: it cannot be shown again.\n');
    const printed = JSON.parse(created.stdout);
    assert.deepEqual(Object.keys(printed), ['name', 'scopes', 'expires_at', 'token']);
    assert.deepEqual([printed.name, printed.scopes], ['ats-upstream', ['ingest', 'read']]);
    assert.ok(apiTokenId(printed.token), printed.token);
    const expiresIn = Date.parse(printed.expires_at) - before;
    assert.ok(expiresIn >= 90 * 86_400_000 && expiresIn < 90 * 86_400_000 + 60_000, String(expiresIn));

    const listed = await tokens('list');
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(!listed.stdout.includes(printed.token.slice(37)), 'the secret is never listed');
    const [row, ...others] = JSON.parse(listed.stdout);
    assert.deepEqual(others, []);
    assert.deepEqual(row, {
      name: 'ats-upstream',
      scopes: ['ingest', 'read'],
      created_at: row.created_at,
      created_by: cliActor(),
      last_used_at: null,
      expires_at: printed.expires_at,
      revoked_at: null,
    });

    const revoked = await tokens('revoke', 'ats-upstream');
    assert.deepEqual(revoked, {
      code: 0,
      stdout: `${JSON.stringify({ name: 'ats-upstream', revoked_by: cliActor() })}\n`,
      stderr: '',
    });
    const [afterRevoke] = JSON.parse((await tokens('list')).stdout);
    assert.equal(typeof afterRevoke.revoked_at, 'string');

    assert.deepEqual(await auditRows(), [
      {
        actor: cliActor(),
        action: 'token.create',
        target: 'ats-upstream',
        parameters: { scopes: ['ingest', 'read'], expires_at: printed.expires_at },
        outcome: 'succeeded',
        error: null,
      },
      {
        actor: cliActor(),
        action: 'token.revoke',
        target: 'ats-upstream',
        parameters: {},
        outcome: 'succeeded',
        error: null,
      },
    ]);
  });

  it('exits 2 with one line for bad input, and writes no token and no succeeded audit row', async () => {
    const auditBefore = (await auditRows()).length;
    const tokensBefore = await tokenRows();
    const refused = async (args: string[], line: string) => {
      assert.deepEqual(
        await tokens(...args),
        { code: 2, stdout: '', stderr: `partner-service tokens: ${line}\n` },
        args.join(' '),
      );
    };
    // Refused before the database is touched: no audit row at all.
    await refused(
      ['create', '--name', 'Ops Team', '--scope', 'read'],
      'invalid token name "Ops Team": 1 to 63 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or a digit',
    );
    await refused(
      ['create', '--name', `a${'b'.repeat(63)}`, '--scope', 'read'],
      `invalid token name "a${'b'.repeat(63)}": 1 to 63 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or a digit`,
    );
    await refused(
      ['create', '--name', 'dash', '--scope', 'read,admin'],
      'unknown scope "admin": the scopes are ingest, read, operate, erase, decode',
    );
    await refused(
      ['create', '--name', 'dash', '--scope', ''],
      'unknown scope "": the scopes are ingest, read, operate, erase, decode',
    );
    await refused(
      ['create', '--name', 'dash'],
      '--scope is required: one or more of ingest, read, operate, erase, decode, separated by commas',
    );
    await refused(['create', '--scope', 'read'], '--name is required');
    await refused(
      ['create', '--name', 'dash', '--scope', 'read', '--expires-in', '0d'],
      '--expires-in "0d" is zero: give a positive duration, such as 90d, 12h or 30m',
    );
    await refused(
      ['create', '--name', 'dash', '--scope', 'read', '--expires-in=-5d'],
      '--expires-in "-5d" is negative: give a positive whole number of days, hours or minutes, such as 90d, 12h or 30m',
    );
    await refused(
      ['create', '--name', 'dash', '--scope', 'read', '--expires-in', '3 months'],
      '--expires-in "3 months" is not a duration: give a positive whole number of days, hours or minutes, such as 90d, 12h or 30m',
    );
    await refused(
      ['create', '--name', 'dash', '--scope', 'read', '--expires-in', '3651d'],
      '--expires-in "3651d" is longer than ten years (3650d)',
    );
    assert.equal((await auditRows()).length, auditBefore);

    // Refused inside the change's transaction: the attempt is recorded as failed, nothing else is written.
    await refused(
      ['create', '--name', 'ats-upstream', '--scope', 'read'],
      'a token named "ats-upstream" exists already (live or revoked): names are never reused, choose another',
    );
    await refused(
      ['revoke', 'ats-upstream'],
      'no live token named "ats-upstream": it does not exist or is revoked already',
    );
    await refused(['revoke', 'nobody'], 'no live token named "nobody": it does not exist or is revoked already');
    assert.deepEqual(await tokenRows(), tokensBefore);
    const failed = (await auditRows()).slice(auditBefore);
    assert.deepEqual(
      failed.map((r) => [r.action, r.target, r.outcome, r.error]),
      [
        [
          'token.create',
          'ats-upstream',
          'failed',
          'InvalidRequestError: a token named "ats-upstream" exists already (live or revoked): names are never reused, choose another',
        ],
        [
          'token.revoke',
          'ats-upstream',
          'failed',
          'InvalidRequestError: no live token named "ats-upstream": it does not exist or is revoked already',
        ],
        [
          'token.revoke',
          'nobody',
          'failed',
          'InvalidRequestError: no live token named "nobody": it does not exist or is revoked already',
        ],
      ],
    );
  });
});
