import assert from 'node:assert/strict';
import { deref, documentSchemas, openApi31Validator, type Doc } from '../support/openapi';
import {
  appHeaders,
  call,
  insertApp,
  insertCompany,
  insertJob,
  insertUsers,
  range,
  startListingApi,
  type ListingApi,
  type Reply,
} from './support';

const APP = { appId: 'openapi-app', key: 'openapi-key-0123456789' };

describe('listings: OpenAPI document', () => {
  let listing: ListingApi;
  let doc: Doc;
  let schemaAt: ReturnType<typeof documentSchemas>;

  /** Checks a real response against what the document declares for that path, method and status. */
  function assertDocumented(template: string, method: 'get' | 'options', res: Reply) {
    const operation = doc.paths[template]?.[method];
    assert.ok(operation, `${method} ${template} is not documented`);
    const declared = deref(doc, operation.responses[String(res.status)]);
    assert.ok(declared, `${method} ${template} does not document status ${res.status}`);
    for (const name of Object.keys(declared.headers ?? {}))
      assert.ok(res.headers[name.toLowerCase()], `missing header ${name}`);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    const validate = schemaAt(declared.content['application/json'].schema.$ref);
    assert.ok(validate(res.body), `${res.status} ${res.text} does not match: ${JSON.stringify(validate.errors)}`);
  }

  before(async () => {
    listing = await startListingApi({ API_VERSIONS: 'v1,v2' });
    const { knex } = listing.db;
    await insertUsers(knex, range(1, 12));
    await insertCompany(
      knex,
      'acme',
      range(1, 12).map((id) => [id, ['admin', 'owner', 'manager', 'member'][id % 4]]),
    );
    await insertJob(knex, 'acme-job', 'acme', [
      [2, 'job_owner'],
      [3, 'collaborator'],
      [7, 'job_interviewer'],
      [11, 'viewer'],
    ]);
    await insertApp(knex, APP, ['acme']);
    const res = await call(`${listing.api.url}/openapi.json`);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    doc = res.body;
    schemaAt = documentSchemas(doc);
  });
  after(async () => listing.close());

  it('GET /openapi.json is a valid OpenAPI 3.1 document', () => {
    const validate = openApi31Validator();
    assert.equal(validate(doc), true, JSON.stringify(validate.errors, null, 2));
    assert.equal(doc.openapi, '3.1.0');
  });

  it('the validator does reject a broken document (the check can fail)', () => {
    const validate = openApi31Validator();
    const broken = structuredClone(doc);
    delete broken.paths['/{api_version}/companies/{company_pk}/users/'].get.responses['200'].description;
    assert.equal(validate(broken), false);
    assert.equal(validate({ ...doc, openapi: '3.0.3' }), false);
  });

  it('covers both operations, the configured versions, the auth headers and every error status', () => {
    for (const template of ['/{api_version}/companies/{company_pk}/users/', '/{api_version}/jobs/{job_pk}/users/']) {
      assert.deepEqual(Object.keys(doc.paths[template].get.responses).sort(), [
        '200',
        '400',
        '403',
        '404',
        '405',
        '500',
      ]);
      assert.deepEqual(doc.paths[template].get.security, [{ AppId: [], AppKey: [] }]);
    }
    assert.deepEqual(doc.components.parameters.ApiVersion.schema.enum, ['v1', 'v2']);
    assert.deepEqual(
      Object.entries(doc.components.securitySchemes).map(([name, s]: [string, any]) => [name, s.type, s.in, s.name]),
      // No SCIM_BEARER_TOKEN here, so no ScimToken: the document lists only what this deployment demands. The
      // internal API always exists, so its token scheme is always there.
      [
        ['AppId', 'apiKey', 'header', 'X-App-Id'],
        ['AppKey', 'apiKey', 'header', 'X-App-Key'],
        ['PortalSession', 'apiKey', 'cookie', 'portal_session'],
        ['PartnerToken', 'http', undefined, undefined],
        ['InternalToken', 'http', undefined, undefined],
      ],
    );
  });

  it('real answers of the company listing match the documented schemas', async () => {
    const template = '/{api_version}/companies/{company_pk}/users/';
    const url = `${listing.api.url}/v1/companies/acme/users/`;
    const headers = appHeaders(APP);
    const first = await call(`${url}?page_size=5`, { headers });
    assert.equal(first.status, 200);
    assertDocumented(template, 'get', first);
    const middle = await call(first.body.next, { headers });
    assert.ok(middle.body.previous && middle.body.next);
    assertDocumented(template, 'get', middle);
    const replies = [
      await call(url, {}),
      await call(url, { headers: { ...headers, 'X-App-Key': 'wrong-key-0123456789' } }),
      await call(`${listing.api.url}/v1/companies/other/users/`, { headers }),
      await call(`${url}?page=99`, { headers }),
      await call(`${url}?cursor=nonsense`, { headers }),
      await call(url, { method: 'DELETE', headers }),
      await call(url, { headers: { ...headers, Host: 'bad host' } }),
    ];
    assert.deepEqual(
      replies.map((r) => r.status),
      [403, 403, 403, 404, 404, 405, 400],
    );
    for (const res of replies) assertDocumented(template, 'get', res);
    assertDocumented(template, 'options', await call(url, { method: 'OPTIONS' }));
  });

  it('real answers of the job listing match the documented schemas, job roles included', async () => {
    const template = '/{api_version}/jobs/{job_pk}/users/';
    const res = await call(`${listing.api.url}/v2/jobs/acme-job/users/`, { headers: appHeaders(APP) });
    assert.equal(res.status, 200);
    assert.deepEqual(
      new Set(res.body.results.map((u: any) => u.role)),
      new Set(['admin', 'owner', 'job_owner', 'collaborator', 'job_interviewer', 'viewer']),
    );
    assertDocumented(template, 'get', res);
    assertDocumented(
      template,
      'get',
      await call(`${listing.api.url}/v1/jobs/nope/users/`, { headers: appHeaders(APP) }),
    );
  });

  it('the schemas are strict enough to catch a wrong answer', () => {
    const validate = schemaAt('#/components/schemas/PaginatedJobUserList');
    const user = {
      id: 1,
      first_name: 'A',
      last_name: 'B',
      email_primary: 'a@b.test',
      emails: ['a@b.test'],
      is_agency_user: false,
    };
    assert.ok(validate({ count: 1, next: null, previous: null, results: [{ ...user, role: 'viewer' }] }));
    assert.equal(validate({ count: 1, next: null, previous: null, results: [{ ...user, role: 'member' }] }), false);
    assert.equal(
      validate({ count: 1, next: null, previous: null, results: [{ ...user, role: 'viewer', extra: 1 }] }),
      false,
    );
    assert.equal(validate({ count: 1, next: 'not a url', previous: null, results: [] }), false);
  });
});
