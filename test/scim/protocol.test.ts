import assert from 'node:assert/strict';
import { authFailuresDuring } from '../support/metrics-text';
import { Writable } from 'node:stream';
import pino from 'pino';
import { scimRouter } from '../../api/scim/router';
import { loadConfig } from '../../lib/config';
import { groupId, scimGet, startScimApi, ERROR_URN, LIST_URN, GROUP_URN, USER_URN, type ScimApi } from './support';
import { SCIM_TOKEN } from '../support/tokens';

const SCIM_JSON = 'application/scim+json; charset=utf-8';

describe('SCIM protocol: discovery, media types, methods', () => {
  let scim: ScimApi;
  before(async () => {
    scim = await startScimApi();
  });
  after(async () => scim.close());

  describe('discovery', () => {
    it('GET /ServiceProviderConfig says what is supported: filter (max 1000), sort, etag; no patch, bulk or changePassword', async () => {
      const reply = await scimGet(scim.base, '/ServiceProviderConfig');
      assert.equal(reply.status, 200);
      assert.equal(reply.headers.get('content-type'), SCIM_JSON);
      assert.deepEqual(reply.body, {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
        patch: { supported: false },
        bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
        filter: { supported: true, maxResults: 1000 },
        changePassword: { supported: false },
        sort: { supported: true },
        etag: { supported: true },
        authenticationSchemes: [],
        meta: { resourceType: 'ServiceProviderConfig', location: `${scim.base}/ServiceProviderConfig` },
      });
    });

    it('GET /ResourceTypes lists Group and User, each also readable at /ResourceTypes/{name}', async () => {
      const group = {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
        id: 'Group',
        name: 'Group',
        endpoint: '/Groups',
        description: 'Group (read-only)',
        schema: GROUP_URN,
        schemaExtensions: [],
        meta: { resourceType: 'ResourceType', location: `${scim.base}/ResourceTypes/Group` },
      };
      const user = {
        ...group,
        id: 'User',
        name: 'User',
        endpoint: '/Users',
        description: 'User (read-only)',
        schema: USER_URN,
        meta: { resourceType: 'ResourceType', location: `${scim.base}/ResourceTypes/User` },
      };
      const listed = await scimGet(scim.base, '/ResourceTypes');
      assert.deepEqual(listed.body, {
        schemas: [LIST_URN],
        totalResults: 2,
        startIndex: 1,
        itemsPerPage: 2,
        Resources: [group, user],
      });
      assert.deepEqual((await scimGet(scim.base, '/ResourceTypes/Group')).body, group);
      assert.deepEqual((await scimGet(scim.base, '/ResourceTypes/User')).body, user);
      assert.equal((await scimGet(scim.base, '/ResourceTypes/EnterpriseUser')).status, 404);
    });

    it('GET /Schemas describes the Group schema attributes and their characteristics', async () => {
      const listed = await scimGet(scim.base, '/Schemas');
      assert.equal(listed.body.totalResults, 2);
      const [schema] = listed.body.Resources;
      assert.equal(schema.id, GROUP_URN);
      assert.equal(schema.meta.location, `${scim.base}/Schemas/${GROUP_URN}`);
      assert.deepEqual(
        schema.attributes.map((a: { name: string }) => a.name),
        ['displayName', 'members'],
      );
      const [displayName, members] = schema.attributes;
      assert.deepEqual(displayName, {
        name: 'displayName',
        type: 'string',
        multiValued: false,
        description: 'A human-readable name for the group.',
        required: true,
        caseExact: false,
        mutability: 'readOnly',
        returned: 'default',
        uniqueness: 'none',
      });
      assert.equal(members.multiValued, true);
      assert.deepEqual(
        members.subAttributes.map((a: { name: string; type: string; caseExact: boolean }) => [
          a.name,
          a.type,
          a.caseExact,
        ]),
        [
          ['value', 'string', false],
          ['display', 'string', false],
          ['type', 'string', false],
          ['$ref', 'reference', true],
        ],
      );
      assert.deepEqual((await scimGet(scim.base, `/Schemas/${GROUP_URN}`)).body, schema);
      assert.equal(
        (await scimGet(scim.base, '/Schemas/urn:ietf:params:scim:schemas:extension:enterprise:2.0:User')).status,
        404,
      );
    });

    it('GET /Schemas describes the User schema: userName, name, emails (primary is a boolean), groups', async () => {
      const listed = await scimGet(scim.base, '/Schemas');
      const schema = listed.body.Resources[1];
      assert.equal(schema.id, USER_URN);
      assert.equal(schema.name, 'User');
      assert.equal(schema.meta.location, `${scim.base}/Schemas/${USER_URN}`);
      assert.deepEqual(
        schema.attributes.map((a: { name: string }) => a.name),
        ['userName', 'name', 'emails', 'groups'],
      );
      const [userName, name, emails, groups] = schema.attributes;
      assert.deepEqual(userName, {
        name: 'userName',
        type: 'string',
        multiValued: false,
        description: "Unique identifier for the user: the user's primary e-mail address.",
        required: true,
        caseExact: false,
        mutability: 'readOnly',
        returned: 'default',
        uniqueness: 'none',
      });
      const subs = (a: { subAttributes: Array<{ name: string; type: string; caseExact: boolean }> }) =>
        a.subAttributes.map((sub) => [sub.name, sub.type, sub.caseExact]);
      assert.equal(name.multiValued, false);
      assert.deepEqual(subs(name), [
        ['formatted', 'string', false],
        ['familyName', 'string', false],
        ['givenName', 'string', false],
      ]);
      assert.equal(emails.multiValued, true);
      assert.deepEqual(subs(emails), [
        ['value', 'string', false],
        ['primary', 'boolean', false],
      ]);
      assert.equal(groups.multiValued, true);
      assert.deepEqual(subs(groups), [
        ['value', 'string', true],
        ['$ref', 'reference', true],
        ['display', 'string', false],
      ]);
      assert.deepEqual((await scimGet(scim.base, `/Schemas/${USER_URN}`)).body, schema);
    });

    it('a filter on a discovery endpoint answers 403', async () => {
      const reply = await scimGet(scim.base, '/Schemas', [['filter', 'id pr']]);
      assert.equal(reply.status, 403);
      assert.deepEqual(reply.body, {
        schemas: [ERROR_URN],
        status: '403',
        detail: 'Filtering is not supported on this discovery endpoint',
      });
    });
  });

  describe('media types', () => {
    const typeFor = async (accept: string | undefined, path = '/Groups') => {
      const reply = await scimGet(scim.base, path, [], { headers: accept === undefined ? {} : { Accept: accept } });
      return reply.headers.get('content-type');
    };

    it('answers application/scim+json by default and when asked for it', async () => {
      assert.equal(await typeFor(undefined), SCIM_JSON);
      assert.equal(await typeFor('application/scim+json'), SCIM_JSON);
      assert.equal(await typeFor('*/*'), SCIM_JSON);
      assert.equal(await typeFor('application/json, application/scim+json'), SCIM_JSON);
    });

    it('answers application/json when Accept asks only for application/json, errors included', async () => {
      assert.equal(await typeFor('application/json'), 'application/json; charset=utf-8');
      assert.equal(await typeFor('application/json;q=0.9'), 'application/json; charset=utf-8');
      assert.equal(await typeFor('application/json', '/Nope'), 'application/json; charset=utf-8');
      assert.equal(await typeFor('application/json', `/Groups/${groupId(99)}`), 'application/json; charset=utf-8');
    });

    it('never answers in HTML, even when Accept asks only for it', async () => {
      assert.equal(await typeFor('text/html'), SCIM_JSON);
      assert.equal(await typeFor('text/html', '/Nope'), SCIM_JSON);
      const reply = await scimGet(scim.base, '/Groups', [['filter', '(']], { headers: { Accept: 'text/html' } });
      assert.equal(reply.headers.get('content-type'), SCIM_JSON);
      assert.equal(reply.body.scimType, 'invalidFilter');
    });

    it('a failure PostgreSQL reports answers 500 in the SCIM error format and media type, without its message', async () => {
      await scim.db.knex.raw('ALTER TABLE scim_groups RENAME TO scim_groups_away');
      try {
        for (const [accept, type] of [
          [undefined, SCIM_JSON],
          ['application/json', 'application/json; charset=utf-8'],
        ] as const) {
          const reply = await scimGet(scim.base, '/Groups', [], { headers: accept ? { Accept: accept } : {} });
          assert.equal(reply.status, 500);
          assert.equal(reply.headers.get('content-type'), type);
          assert.deepEqual(reply.body, {
            schemas: [ERROR_URN],
            status: '500',
            detail: 'An unexpected error occurred.',
          });
        }
      } finally {
        await scim.db.knex.raw('ALTER TABLE scim_groups_away RENAME TO scim_groups');
      }
      assert.equal((await scimGet(scim.base, '/Groups')).status, 200);
    });
  });

  describe('methods and unknown paths', () => {
    for (const path of [
      '/Groups',
      `/Groups/${groupId(1)}`,
      '/Users',
      '/Users/1',
      '/ServiceProviderConfig',
      '/ResourceTypes',
      '/Schemas',
      `/Schemas/${GROUP_URN}`,
    ]) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
        it(`${method} ${path} answers 405 with Allow and the SCIM error body`, async () => {
          const reply = await scimGet(scim.base, path, [], { method });
          assert.equal(reply.status, 405);
          assert.equal(reply.headers.get('allow'), 'GET, HEAD');
          assert.equal(reply.headers.get('content-type'), SCIM_JSON);
          assert.deepEqual(reply.body, {
            schemas: [ERROR_URN],
            status: '405',
            detail: `Method ${method} is not supported on /scim/v2${path}; this service provider is read-only`,
          });
        });
      }
    }

    it('HEAD /Groups answers 200 without a body', async () => {
      const res = await fetch(`${scim.base}/Groups`, { method: 'HEAD' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), SCIM_JSON);
      assert.equal(await res.text(), '');
    });

    it('HEAD /Users/1 answers 200 with the ETag and without a body', async () => {
      const res = await fetch(`${scim.base}/Users/1`, { method: 'HEAD' });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('etag') ?? '', /^W\/"/);
      assert.equal(await res.text(), '');
    });

    for (const path of ['', '/', '/Me', '/Groups/a/b', '/Users/1/groups', '/Bulk']) {
      it(`GET /scim/v2${path} answers 404 with the SCIM error body`, async () => {
        const reply = await scimGet(scim.base, path);
        assert.equal(reply.status, 404);
        assert.deepEqual(reply.body, {
          schemas: [ERROR_URN],
          status: '404',
          detail: `No SCIM resource at /scim/v2${path}`,
        });
      });
    }

    it('POST to an unknown SCIM path answers 404, not 405', async () => {
      const reply = await scimGet(scim.base, '/Bulk', [], { method: 'POST' });
      assert.equal(reply.status, 404);
    });
  });
});

describe('SCIM authentication', () => {
  describe('with SCIM_BEARER_TOKEN set', () => {
    let scim: ScimApi;
    before(async () => {
      scim = await startScimApi({ SCIM_BEARER_TOKEN: SCIM_TOKEN });
    });
    after(async () => scim.close());

    const unauthorized = {
      schemas: [ERROR_URN],
      status: '401',
      detail: 'A valid bearer token is required: send Authorization: Bearer <token>',
    };

    for (const [label, headers] of [
      ['no Authorization header', {}],
      ['a wrong token', { Authorization: 'Bearer wrong-token-0123456789abcdef' }],
      ['a token that is a prefix of the right one', { Authorization: `Bearer ${SCIM_TOKEN.slice(0, -1)}` }],
      ['the right token under another scheme', { Authorization: `Basic ${SCIM_TOKEN}` }],
      ['an empty bearer', { Authorization: 'Bearer ' }],
    ] as const) {
      it(`answers 401 with the SCIM error body for ${label}`, async () => {
        const reply = await scimGet(scim.base, '/Groups', [], { headers });
        assert.equal(reply.status, 401);
        assert.equal(reply.headers.get('www-authenticate'), 'Bearer realm="SCIM"');
        assert.deepEqual(reply.body, unauthorized);
        assert.equal(JSON.stringify(reply.body).includes(SCIM_TOKEN), false);
      });
    }

    it('counts each 401 by reason and route pattern (partner_service_auth_failures_total)', async () => {
      const { gained, text } = await authFailuresDuring(scim.api.url, async () => {
        await scimGet(scim.base, '/Groups');
        await scimGet(scim.base, '/Users/1', [], { headers: { Authorization: 'Bearer wrong-token-0123456789abcdef' } });
        assert.equal(
          (await scimGet(scim.base, '/Groups', [], { headers: { Authorization: `Bearer ${SCIM_TOKEN}` } })).status,
          200,
        );
      });
      assert.deepEqual(gained, { 'missing_token /scim/v2/Groups': 1, 'invalid_token /scim/v2/Users/:id': 1 });
      assert.ok(!text.includes('wrong-token') && !text.includes(SCIM_TOKEN));
    });

    it('guards discovery and unsupported methods too', async () => {
      assert.equal((await scimGet(scim.base, '/ServiceProviderConfig')).status, 401);
      assert.equal((await scimGet(scim.base, '/Groups', [], { method: 'POST' })).status, 401);
    });

    it('guards Users the same way as Groups', async () => {
      for (const path of ['/Users', '/Users/1', '/Users/99']) {
        const reply = await scimGet(scim.base, path, [['filter', 'userName eq "ada@example.test"']], {
          headers: { Authorization: 'Bearer wrong-token-0123456789abcdef' },
        });
        assert.equal(reply.status, 401);
        assert.deepEqual(reply.body, unauthorized);
      }
      const reply = await scimGet(scim.base, '/Users', [['filter', 'userName eq "ada@example.test"']], {
        headers: { Authorization: `Bearer ${SCIM_TOKEN}` },
      });
      assert.equal(reply.status, 200);
      assert.deepEqual(
        reply.body.Resources.map((r: { id: string }) => r.id),
        ['1'],
      );
    });

    it('serves requests that carry the token (scheme in any case) and advertises the scheme', async () => {
      for (const scheme of ['Bearer', 'bearer']) {
        const reply = await scimGet(scim.base, `/Groups/${groupId(1)}`, [], {
          headers: { Authorization: `${scheme} ${SCIM_TOKEN}` },
        });
        assert.equal(reply.status, 200);
        assert.equal(reply.body.displayName, 'Engineering');
      }
      const config = await scimGet(scim.base, '/ServiceProviderConfig', [], {
        headers: { Authorization: `Bearer ${SCIM_TOKEN}` },
      });
      assert.deepEqual(config.body.authenticationSchemes, [
        {
          type: 'oauthbearertoken',
          name: 'Bearer token',
          description: 'A static bearer token configured on the service (SCIM_BEARER_TOKEN).',
          specUri: 'https://www.rfc-editor.org/info/rfc6750',
          primary: true,
        },
      ]);
    });
  });

  describe('without SCIM_BEARER_TOKEN', () => {
    let scim: ScimApi;
    before(async () => {
      scim = await startScimApi();
    });
    after(async () => scim.close());

    it('answers without credentials, as spec 4.4 callers send only Accept', async () => {
      const reply = await scimGet(scim.base, '/Groups', [['filter', 'displayName eq "Sales"']], {
        headers: { Accept: 'application/json' },
      });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(reply.body.totalResults, 1);
    });
  });

  describe('start-up warning', () => {
    const warningsWhenBuilt = (env: NodeJS.ProcessEnv) => {
      const lines: Array<{ level: number; msg: string }> = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      });
      const logger = pino({ level: 'info' }, sink);
      scimRouter({ config: loadConfig(env), knex: scim.db.knex, logger });
      return lines.filter((line) => line.level === 40).map((line) => line.msg);
    };
    let scim: ScimApi;
    before(async () => {
      scim = await startScimApi();
    });
    after(async () => scim.close());

    it('warns once when SCIM runs without a token, and not when one is set', () => {
      assert.deepEqual(warningsWhenBuilt({}), [
        'SCIM_BEARER_TOKEN is not set: /scim/v2 answers requests without credentials',
      ]);
      assert.deepEqual(warningsWhenBuilt({ SCIM_BEARER_TOKEN: SCIM_TOKEN }), []);
    });
  });
});
