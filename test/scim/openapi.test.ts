// The SCIM routes in /openapi.json: real answers (real API over PostgreSQL) match what the document declares.
import assert from 'node:assert/strict';
import { deref, documentSchemas, openApi31Validator, type Doc } from '../support/openapi';
import { groupId, scimGet, startScimApi, type ScimApi, type ScimReply } from './support';

const TOKEN = 'scim-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };

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
    scim = await startScimApi({ SCIM_BEARER_TOKEN: TOKEN });
    doc = await (await fetch(`${scim.api.url}/openapi.json`)).json();
    schemaAt = documentSchemas(doc);
  });
  after(async () => scim.close());

  it('documents every read-only SCIM route, with its bearer token, in a valid OpenAPI 3.1 document', () => {
    const validate = openApi31Validator();
    assert.equal(validate(doc), true, JSON.stringify(validate.errors));
    assert.deepEqual(Object.keys(doc.paths).filter((p) => p.startsWith('/scim/v2')), [
      '/scim/v2/Groups', '/scim/v2/Groups/{id}', '/scim/v2/Users', '/scim/v2/Users/{id}',
      '/scim/v2/ServiceProviderConfig', '/scim/v2/ResourceTypes', '/scim/v2/ResourceTypes/{name}', '/scim/v2/Schemas', '/scim/v2/Schemas/{uri}',
    ]);
    assert.deepEqual(doc.paths['/scim/v2/Groups'].get.security, [{ ScimToken: [] }]);
    assert.deepEqual(Object.keys(doc.components.schemas.ScimGroup.properties), ['schemas', 'id', 'externalId', 'displayName', 'members', 'meta']);
  });

  it('real answers of every SCIM route match the documented schemas', async () => {
    const get = (path: string, query: Array<[string, string]> = [], headers: Record<string, string> = auth) => scimGet(scim.base, path, query, { headers });
    const cases: Array<[string, ScimReply, number]> = [
      ['/Groups', await get('/Groups'), 200],
      ['/Groups', await get('/Groups', [['filter', 'displayName sw "Eng"'], ['attributes', 'displayName']]), 200],
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
    assert.deepEqual(cases.map(([, res]) => res.status), cases.map(([, , status]) => status));
    for (const [template, res] of cases) assertDocumented(template, res);
  });

  it('the resource schema catches a wrong answer', () => {
    const validate = schemaAt('#/components/schemas/ScimGroup');
    assert.equal(validate({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], id: 'x', members: [{ value: 1 }] }), false);
    assert.equal(validate({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], id: 'x' }), false);
    assert.equal(validate({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], id: 'x', meta: { created: 'yesterday' } }), false);
  });
});
