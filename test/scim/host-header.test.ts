import assert from 'node:assert/strict';
import { request } from 'undici';
import { groupId, startScimApi, type ScimApi } from './support';

describe('SCIM absolute URLs and the Host header', () => {
  let scim: ScimApi;
  before(async () => {
    scim = await startScimApi({ TRUST_PROXY: 'true' });
  });
  after(async () => scim.close());

  it('builds meta.location from a valid forwarded host', async () => {
    const res = await request(`${scim.base}/Groups/${groupId(1)}`, {
      headers: { 'x-forwarded-host': 'idp.example.test', 'x-forwarded-proto': 'https' },
    });
    assert.equal(res.statusCode, 200);
    const body = (await res.body.json()) as { meta: { location: string } };
    assert.equal(body.meta.location, `https://idp.example.test/scim/v2/Groups/${groupId(1)}`);
  });

  for (const host of ['x"y<z>', 'evil.test/path', 'a b']) {
    it(`answers 400 invalidValue, never echoing it, for the host ${JSON.stringify(host)}`, async () => {
      const res = await request(`${scim.base}/Groups`, { headers: { 'x-forwarded-host': host } });
      assert.equal(res.statusCode, 400);
      assert.deepEqual(await res.body.json(), {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        status: '400',
        scimType: 'invalidValue',
        detail: 'Invalid Host header.',
      });
    });
  }
});
