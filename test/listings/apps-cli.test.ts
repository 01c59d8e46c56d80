import assert from 'node:assert/strict';
import { verifyAppKey } from '../../lib/app-keys';
import { runCli } from '../support/cli';
import { call, insertCompany, insertUsers, startListingApi, type ListingApi } from './support';

describe('partner-service apps', () => {
  let listing: ListingApi;
  let env: NodeJS.ProcessEnv;
  const apps = (...args: string[]) => runCli(['apps', ...args], env);

  before(async () => {
    listing = await startListingApi();
    env = { DATABASE_URL: listing.db.url, LOG_LEVEL: 'silent' };
    await insertUsers(listing.db.knex, [1]);
    await insertCompany(listing.db.knex, 'acme', [[1, 'owner']]);
    await insertCompany(listing.db.knex, 'globex');
  });
  after(async () => listing.close());

  it('create prints a new id and key once, stores only a hash, and the key opens the granted listings; revoke closes them at once', async () => {
    const created = await apps('create', '--name', 'Acme integration', '--company', 'acme', '--company', 'globex');
    assert.equal(created.code, 0, created.stderr);
    const match = /^app_id: (app_[\w-]+)\napp_key: (pk_[\w-]{43})\n$/.exec(created.stdout);
    assert.ok(match, created.stdout);
    const [, appId, appKey] = match;
    assert.match(created.stderr, /shown again/);

    const row = await listing.db.knex('partner_apps').where({ app_id: appId }).first();
    assert.equal(row.name, 'Acme integration');
    assert.ok(verifyAppKey(appKey, { salt: row.key_salt, hash: row.key_hash }));
    assert.ok(!JSON.stringify(row).includes(appKey.slice(3)), 'the key itself is not stored');
    assert.deepEqual(
      await listing.db.knex('partner_app_companies').where({ app_id: appId }).orderBy('company_id').pluck('company_id'),
      ['acme', 'globex'],
    );

    const url = `${listing.api.url}/v1/companies/acme/users/`;
    const headers = { 'X-App-Id': appId, 'X-App-Key': appKey };
    assert.equal((await call(url, { headers })).status, 200);

    const listed = await apps('list', '--json');
    assert.equal(listed.code, 0);
    const [summary] = JSON.parse(listed.stdout).filter((a: { app_id: string }) => a.app_id === appId);
    assert.deepEqual(
      [summary.name, summary.status, summary.revoked_at, summary.companies, summary.scopes],
      ['Acme integration', 'active', null, ['acme', 'globex'], ['listings']],
    );
    const table = await apps('list');
    assert.match(
      table.stdout,
      new RegExp(`^${appId}\\tactive\\t\\S+\\tlistings\\tacme,globex\\tAcme integration$`, 'm'),
    );
    assert.ok(!table.stdout.includes(appKey) && !listed.stdout.includes(appKey));

    const revoked = await apps('revoke', appId);
    assert.deepEqual([revoked.code, revoked.stdout], [0, `revoked ${appId}\n`]);
    const denied = await call(url, { headers });
    assert.deepEqual([denied.status, denied.body], [403, { detail: 'Incorrect authentication credentials.' }]);
    assert.match((await apps('list')).stdout, new RegExp(`^${appId}\\trevoked\\t`, 'm'));
    const revokedJson = JSON.parse((await apps('list', '--json')).stdout).find(
      (a: { app_id: string }) => a.app_id === appId,
    );
    assert.deepEqual([revokedJson.status, typeof revokedJson.revoked_at], ['revoked', 'string']);
    assert.deepEqual(await apps('revoke', appId).then((r) => [r.code, r.stdout]), [
      0,
      `${appId} was already revoked\n`,
    ]);
  });

  it('create --json prints one JSON object', async () => {
    const created = await apps('create', '--name', 'Scripted', '--company', 'acme', '--json');
    assert.equal(created.code, 0, created.stderr);
    const { app_id, app_key } = JSON.parse(created.stdout);
    assert.equal(
      (
        await call(`${listing.api.url}/v1/companies/acme/users/`, {
          headers: { 'X-App-Id': app_id, 'X-App-Key': app_key },
        })
      ).status,
      200,
    );
  });

  it('an unknown company fails with exit 1 and writes nothing', async () => {
    const before = await listing.db.knex('partner_apps').count({ n: '*' });
    const res = await apps('create', '--name', 'Typo', '--company', 'acme', '--company', 'acmee');
    assert.equal(res.code, 1);
    assert.equal(res.stdout, '');
    assert.equal(res.stderr, 'partner-service apps create: unknown company "acmee"; nothing was written.\n');
    assert.deepEqual(await listing.db.knex('partner_apps').count({ n: '*' }), before);
  });

  it('--scope grants the partner API; `apps scopes` replaces them, audited; an unknown scope is a usage error', async () => {
    const created = await apps(
      'create',
      '--name',
      'Scoped',
      '--company',
      'acme',
      '--scope',
      'deliveries:read',
      '--scope',
      'deliveries:read',
      '--json',
    );
    assert.equal(created.code, 0, created.stderr);
    const { app_id, app_key } = JSON.parse(created.stdout);
    const headers = { 'X-App-Id': app_id, 'X-App-Key': app_key };
    const whoami = () => call(`${listing.api.url}/partner/v1/app`, { headers });
    assert.deepEqual((await whoami()).body.scopes, ['deliveries:read']);
    const listings = await call(`${listing.api.url}/v1/companies/acme/users/`, { headers });
    assert.deepEqual(
      [listings.status, listings.body],
      [403, { detail: 'This app does not have the scope "listings", which this request needs.' }],
    );

    const changed = await apps('scopes', app_id, '--scope', 'listings', '--scope', 'endpoint:manage');
    assert.deepEqual([changed.code, changed.stdout], [0, `${app_id}: listings, endpoint:manage\n`]);
    assert.deepEqual((await whoami()).body.scopes, ['listings', 'endpoint:manage']);
    const audited = await listing.db.knex('audit_events').where({ action: 'app.scopes', target: app_id }).first();
    assert.deepEqual([audited.outcome, audited.parameters], ['succeeded', { scopes: ['listings', 'endpoint:manage'] }]);

    const unknown = await apps('scopes', app_id, '--scope', 'deliveries:delete');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown scope "deliveries:delete": expected one of listings, deliveries:read/);
    const none = await apps('scopes', app_id);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /at least one --scope is required/);
    const gone = await apps('scopes', 'app_nope', '--scope', 'listings');
    assert.deepEqual([gone.code, gone.stderr], [1, 'partner-service apps scopes: no active app "app_nope"\n']);
  });

  it('revoking an unknown app exits 1', async () => {
    const res = await apps('revoke', 'app_nope');
    assert.deepEqual([res.code, res.stderr], [1, 'partner-service apps revoke: no app "app_nope"\n']);
  });

  it('bad usage exits 2 with the usage text', async () => {
    for (const args of [
      [],
      ['create', '--company', 'acme'],
      ['create', '--name', 'x', '--company', 'acme', '--bogus'],
      ['revoke'],
    ]) {
      const res = await apps(...args);
      assert.equal(res.code, 2, args.join(' '));
      assert.match(res.stderr, /Usage: partner-service apps create/, args.join(' '));
    }
  });
});
