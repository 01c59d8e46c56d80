import assert from 'node:assert/strict';
import { request } from 'undici';
import {
  groupId,
  GROUPS,
  idsOf,
  scimGet,
  startScimApi,
  USERS,
  ERROR_URN,
  LIST_URN,
  USER_URN,
  type ScimApi,
} from './support';

describe('SCIM Users: resources, paging, sorting, projection and ETags', () => {
  let scim: ScimApi;
  before(async () => {
    scim = await startScimApi();
  });
  after(async () => scim.close());

  const list = (...query: Array<[string, string]>) => scimGet(scim.base, '/Users', query);

  it('GET /Users/{id} answers the core User: userName, name, emails (primary flagged), groups, meta', async () => {
    const reply = await scimGet(scim.base, '/Users/1');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('content-type'), 'application/scim+json; charset=utf-8');
    const { meta, ...rest } = reply.body;
    assert.deepEqual(rest, {
      schemas: [USER_URN],
      id: '1',
      userName: 'Ada@Example.test',
      name: { formatted: 'Ada Lovelace', familyName: 'Lovelace', givenName: 'Ada' },
      emails: [
        { value: 'Ada@Example.test', primary: true },
        { value: 'ada.lovelace@engine.test', primary: false },
      ],
      groups: [
        { value: groupId(1), $ref: `${scim.base}/Groups/${groupId(1)}`, display: 'Engineering' },
        { value: groupId(7), $ref: `${scim.base}/Groups/${groupId(7)}`, display: 'ops "quoted"' },
      ],
    });
    assert.deepEqual(
      { ...meta, version: undefined },
      {
        resourceType: 'User',
        created: '2023-01-01T00:00:00.000000Z',
        lastModified: '2023-06-01T00:00:00.000000Z',
        location: `${scim.base}/Users/1`,
        version: undefined,
      },
    );
    assert.match(meta.version, /^W\/"[0-9a-f]{16}"$/);
    assert.equal(reply.headers.get('etag'), meta.version);
  });

  it('a user in no group has no groups attribute', async () => {
    await scim.db.knex('users').insert({
      id: 77,
      first_name: 'No',
      last_name: 'Groups',
      email_primary: 'no@groups.test',
      emails: ['no@groups.test'],
    });
    try {
      const reply = await scimGet(scim.base, '/Users/77');
      assert.equal(reply.status, 200);
      assert.equal(reply.body.groups, undefined);
    } finally {
      await scim.db.knex('users').where({ id: 77 }).delete();
    }
  });

  for (const id of ['99', '0', '-1', '01', 'abc', '1.0', '99999999999999999999', '9223372036854775808', ' 1']) {
    it(`GET /Users/${JSON.stringify(id)} answers 404 with the SCIM error body`, async () => {
      const reply = await scimGet(scim.base, `/Users/${encodeURIComponent(id)}`);
      assert.equal(reply.status, 404);
      assert.deepEqual(reply.body, {
        schemas: [ERROR_URN],
        status: '404',
        detail: `User ${JSON.stringify(id)} not found`,
      });
    });
  }

  it('GET /Users lists every user in id order with the list envelope', async () => {
    const reply = await list();
    assert.equal(reply.status, 200);
    assert.equal(reply.body.schemas[0], LIST_URN);
    assert.equal(reply.body.totalResults, USERS.length);
    assert.equal(reply.body.startIndex, 1);
    assert.equal(reply.body.itemsPerPage, USERS.length);
    assert.deepEqual(idsOf(reply.body), ['1', '2', '3', '4', '10']);
    assert.deepEqual(reply.body.Resources[0], (await scimGet(scim.base, '/Users/1')).body);
  });

  it('every group member $ref resolves to the matching User', async () => {
    const groups = (await scimGet(scim.base, '/Groups')).body.Resources as Array<{
      id: string;
      members?: Array<{ value: string; type: string; display?: string; $ref: string }>;
    }>;
    const userMembers = groups.flatMap((g) =>
      (g.members ?? []).filter((m) => m.type === 'User').map((m) => ({ group: g.id, member: m })),
    );
    assert.equal(
      userMembers.length,
      GROUPS.reduce((n, g) => n + g.users.length, 0),
    );
    for (const { group, member } of userMembers) {
      const res = await fetch(member.$ref);
      assert.equal(res.status, 200, member.$ref);
      const user = (await res.json()) as { id: string; name: { formatted: string }; groups: Array<{ value: string }> };
      assert.equal(user.id, member.value);
      assert.equal(user.name.formatted, member.display);
      assert.ok(
        user.groups.some((g) => g.value === group),
        `${member.$ref} lists group ${group}`,
      );
    }
  });

  it('every group $ref of a user resolves to a Group that lists the user', async () => {
    const user = (await scimGet(scim.base, '/Users/2')).body as {
      groups: Array<{ value: string; $ref: string; display: string }>;
    };
    for (const g of user.groups) {
      const group = (await (await fetch(g.$ref)).json()) as {
        id: string;
        displayName: string;
        members: Array<{ value: string }>;
      };
      assert.equal(group.id, g.value);
      assert.equal(group.displayName, g.display);
      assert.ok(group.members.some((m) => m.value === '2'));
    }
  });

  it('startIndex and count page through the users; a page that does not prove the total still counts', async () => {
    const first = await list(['count', '2']);
    assert.deepEqual(idsOf(first.body), ['1', '2']);
    assert.equal(first.body.totalResults, 5);
    assert.equal(first.body.itemsPerPage, 2);
    const last = await list(['startIndex', '5'], ['count', '2']);
    assert.deepEqual(idsOf(last.body), ['10']);
    assert.equal(last.body.totalResults, 5);
    assert.equal(last.body.startIndex, 5);
    const none = await list(['count', '0']);
    assert.deepEqual(none.body.Resources, []);
    assert.equal(none.body.totalResults, 5);
    const beyond = await list(['startIndex', '50']);
    assert.deepEqual(beyond.body.Resources, []);
    assert.equal(beyond.body.totalResults, 5);
  });

  it('sortBy userName (case-insensitive), name.familyName, meta.lastModified, ascending and descending', async () => {
    assert.deepEqual(idsOf((await list(['sortBy', 'userName'])).body), ['1', '10', '2', '4', '3']);
    assert.deepEqual(idsOf((await list(['sortBy', 'userName'], ['sortOrder', 'descending'])).body), [
      '3',
      '4',
      '2',
      '10',
      '1',
    ]);
    assert.deepEqual(idsOf((await list(['sortBy', 'name.familyName'])).body), ['2', '1', '10', '3', '4']);
    assert.deepEqual(
      idsOf(
        (
          await list(
            ['sortBy', 'urn:ietf:params:scim:schemas:core:2.0:User:meta.lastModified'],
            ['sortOrder', 'DESCENDING'],
          )
        ).body,
      ),
      ['10', '4', '3', '2', '1'],
    );
    assert.deepEqual(idsOf((await list(['sortBy', 'id'], ['sortOrder', 'descending'])).body), [
      '10',
      '4',
      '3',
      '2',
      '1',
    ]);
  });

  it('sortBy an attribute that cannot be sorted answers 400 invalidValue', async () => {
    const reply = await list(['sortBy', 'emails.value']);
    assert.equal(reply.status, 400);
    assert.equal(reply.body.scimType, 'invalidValue');
    assert.match(reply.body.detail, /userName/);
  });

  it('attributes and excludedAttributes project, sub-attributes included; id and schemas stay', async () => {
    const only = await list(['attributes', 'userName,emails.value'], ['filter', 'id eq "3"']);
    assert.deepEqual(only.body.Resources, [
      {
        schemas: [USER_URN],
        id: '3',
        userName: 'ÉMILE@zola.test',
        emails: [{ value: 'ÉMILE@zola.test' }, { value: 'emile@example.test' }, { value: 'ecrivain_100%@zola.test' }],
      },
    ]);
    const without = await scimGet(scim.base, '/Users/3', [['excludedAttributes', 'groups,meta,name.formatted']]);
    assert.deepEqual(Object.keys(without.body).sort(), ['emails', 'id', 'name', 'schemas', 'userName']);
    assert.deepEqual(without.body.name, { familyName: 'Zola', givenName: 'Émile' });
  });

  it('GET /Users/{id} with If-None-Match of the current version answers 304; a membership change changes the version', async () => {
    const first = await scimGet(scim.base, '/Users/4');
    const etag = first.headers.get('etag')!;
    // undici's request, not fetch: fetch adds `Cache-Control: no-cache` to conditional requests.
    const conditional = async () =>
      (await request(`${scim.base}/Users/4`, { headers: { 'If-None-Match': etag } })).statusCode;
    assert.equal(await conditional(), 304);
    const listed = await list(['filter', 'id eq "4"'], ['excludedAttributes', 'groups']);
    assert.equal(listed.body.Resources[0].meta.version, etag, 'the version does not depend on the projection');
    await scim.db.knex('scim_group_members').insert({ group_id: groupId(5), member_user_id: 4 });
    try {
      assert.equal(await conditional(), 200);
      assert.notEqual((await scimGet(scim.base, '/Users/4')).headers.get('etag'), etag);
    } finally {
      await scim.db
        .knex('scim_group_members')
        .where({ group_id: groupId(5), member_user_id: 4 })
        .delete();
    }
    assert.equal(await conditional(), 304);
  });
});
