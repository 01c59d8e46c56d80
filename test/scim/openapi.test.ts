// The SCIM routes in /openapi.json: real answers (real API over PostgreSQL) match what the document declares.
import assert from 'node:assert/strict';
import { deref, documentSchemas, openApi31Validator, type Doc } from '../support/openapi';
import { openApiDocument } from '../../api/openapi/document';
import { loadConfig } from '../../lib/config';
import { groupId, scimGet, startScimApi, type ScimApi, type ScimReply } from './support';
import { SCIM_TOKEN } from '../support/tokens';

const auth = { authorization: `Bearer ${SCIM_TOKEN}` };

describe('SCIM: OpenAPI document', () => {
  let scim: ScimApi;
  let doc: Doc;
  let schemaAt: ReturnType<typeof documentSchemas>;

  function assertDocumented(template: string, res: ScimReply) {
    const declared = deref(doc, doc.paths[`/scim/v2${template}`]?.get?.responses[String(res.status)]);
    assert.ok(declared, `GET ${template} does not document ${res.status}`);
    assert.equal(res.headers.get('content-type'), 'application/scim+json; charset=utf-8');
    const validate = schemaAt(declared.content['application/scim+json'].schema.$ref);
    assert.equal(validate(res.body), true, `${template} ${res.status}: ${JSON.stringify(validate.errors)}`);
  }

  before(async () => {
    scim = await startScimApi({ SCIM_BEARER_TOKEN: SCIM_TOKEN });
    doc = await (await fetch(`${scim.api.url}/openapi.json`)).json();
    schemaAt = documentSchemas(doc);
  });
  after(async () => scim.close());

  it('documents every read-only SCIM route, with its bearer token, in a valid OpenAPI 3.1 document', () => {
    const validate = openApi31Validator();
    assert.equal(validate(doc), true, JSON.stringify(validate.errors));
    assert.deepEqual(
      Object.keys(doc.paths).filter((p) => p.startsWith('/scim/v2')),
      [
        '/scim/v2/Groups',
        '/scim/v2/Groups/{id}',
        '/scim/v2/Users',
        '/scim/v2/Users/{id}',
        '/scim/v2/ServiceProviderConfig',
        '/scim/v2/ResourceTypes',
        '/scim/v2/ResourceTypes/{name}',
        '/scim/v2/Schemas',
        '/scim/v2/Schemas/{uri}',
      ],
    );
    assert.deepEqual(doc.paths['/scim/v2/Groups'].get.security, [{ ScimToken: [] }]);
    assert.deepEqual(Object.keys(doc.components.schemas.ScimGroup.properties), [
      'schemas',
      'id',
      'externalId',
      'displayName',
      'members',
      'meta',
    ]);
  });

  it('without SCIM_BEARER_TOKEN, the SCIM operations demand no credentials and document no 401', () => {
    const open = openApiDocument(loadConfig({})) as Doc;
    const operations = Object.entries(open.paths)
      .filter(([path]) => path.startsWith('/scim/v2'))
      .map(([, item]: [string, any]) => item.get);
    assert.equal(operations.length, 9);
    for (const operation of operations) {
      assert.equal(operation.security, undefined, operation.operationId);
      assert.equal(operation.responses['401'], undefined, operation.operationId);
    }
    assert.equal(open.components.securitySchemes.ScimToken, undefined);
    // With the token (this suite's server), every one of them demands it.
    for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith('/scim/v2')) as Array<
      [string, any]
    >) {
      assert.deepEqual(item.get.security, [{ ScimToken: [] }], path);
      assert.ok(item.get.responses['401'], path);
    }
  });

  it('startIndex and count take any integer, with their RFC 7644 meanings', async () => {
    const list = doc.paths['/scim/v2/Groups'].get.parameters;
    const schemaOf = (name: string) => list.find((p: { name: string }) => p.name === name).schema;
    assert.deepEqual(schemaOf('startIndex'), { type: 'integer', default: 1 });
    assert.deepEqual(schemaOf('count'), { type: 'integer', default: 100 });
    const get = (query: Array<[string, string]>) => scimGet(scim.base, '/Groups', query, { headers: auth });
    const [negative, huge, below, empty] = await Promise.all([
      get([['count', '-1']]),
      get([['count', '5000']]),
      get([['startIndex', '-9836024242']]),
      get([['sortBy', '']]),
    ]);
    assert.deepEqual([negative.status, negative.body.itemsPerPage, negative.body.Resources.length], [200, 0, 0]);
    assert.deepEqual([huge.status, huge.body.itemsPerPage], [200, 8]);
    assert.deepEqual([below.status, below.body.startIndex], [200, 1]);
    // An empty sortBy means none: every group, in id order.
    assert.deepEqual([empty.status, empty.body.totalResults, empty.body.Resources[0].id], [200, 8, groupId(1)]);
  });

  it('real answers of every SCIM route match the documented schemas', async () => {
    const get = (path: string, query: Array<[string, string]> = [], headers: Record<string, string> = auth) =>
      scimGet(scim.base, path, query, { headers });
    const cases: Array<[string, ScimReply, number]> = [
      ['/Groups', await get('/Groups'), 200],
      [
        '/Groups',
        await get('/Groups', [
          ['filter', 'displayName sw "Eng"'],
          ['attributes', 'displayName'],
        ]),
        200,
      ],
      ['/Groups', await get('/Groups', [['filter', 'displayName eq']]), 400],
      ['/Groups', await get('/Groups', [], {}), 401],
      ['/Groups/{id}', await get(`/Groups/${groupId(2)}`), 200],
      ['/Groups/{id}', await get(`/Groups/${groupId(99)}`), 404],
      ['/Users', await get('/Users', [['count', '3']]), 200],
      ['/Users/{id}', await get('/Users/1'), 200],
      ['/Users/{id}', await get('/Users/999999'), 404],
      ['/ServiceProviderConfig', await get('/ServiceProviderConfig'), 200],
      ['/ResourceTypes', await get('/ResourceTypes'), 200],
      ['/ResourceTypes/{name}', await get('/ResourceTypes/Group'), 200],
      ['/Schemas', await get('/Schemas'), 200],
      ['/Schemas/{uri}', await get('/Schemas/urn:ietf:params:scim:schemas:core:2.0:Group'), 200],
    ];
    assert.deepEqual(
      cases.map(([, res]) => res.status),
      cases.map(([, , status]) => status),
    );
    for (const [template, res] of cases) assertDocumented(template, res);
  });

  it('the resource schema catches a wrong answer', () => {
    const validate = schemaAt('#/components/schemas/ScimGroup');
    assert.equal(
      validate({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], id: 'x', members: [{ value: 1 }] }),
      false,
    );
    assert.equal(validate({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], id: 'x' }), false);
    assert.equal(
      validate({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], id: 'x', meta: { created: 'yesterday' } }),
      false,
    );
  });
});
