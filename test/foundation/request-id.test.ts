import assert from 'node:assert/strict';
import { callerRequestId } from '../../api/request-id';
import { startTestApi, type TestApi } from '../support/api';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request id (api/request-id.ts): X-Request-Id', function () {
  this.timeout(60_000);

  it('callerRequestId: 1 to 128 characters of [A-Za-z0-9._:-], else none', () => {
    assert.equal(callerRequestId('a'), 'a');
    assert.equal(callerRequestId('A-z_0.9:'), 'A-z_0.9:');
    assert.equal(callerRequestId(''), undefined);
    assert.equal(callerRequestId('a'.repeat(129)), undefined);
    assert.equal(callerRequestId('a\nb'), undefined);
    assert.equal(callerRequestId('a,b'), undefined);
  });

  let stack: TestApi;
  before(async () => {
    stack = await startTestApi();
  });
  after(() => stack?.close());

  const requestIdOf = async (path: string, header?: string) => {
    const response = await fetch(`${stack.api.url}${path}`, {
      headers: header === undefined ? {} : { 'X-Request-Id': header },
    });
    await response.arrayBuffer();
    return { status: response.status, id: response.headers.get('x-request-id') };
  };

  it('sends back a sane caller id unchanged, on a success and on an error answer', async () => {
    const sane = `Req-1.2:3_4-${'x'.repeat(128 - 12)}`;
    assert.equal(sane.length, 128);
    assert.deepEqual(await requestIdOf('/healthz', sane), { status: 200, id: sane });
    assert.deepEqual(await requestIdOf('/no-such-path', 'abc'), { status: 404, id: 'abc' });
    // Refused by the internal API's auth: the answer names the request too.
    assert.deepEqual(await requestIdOf('/internal/v1/partner', 'trace:42'), { status: 401, id: 'trace:42' });
  });

  it('generates a new UUID for each request without one, or with one that is too long or has other characters', async () => {
    const seen = new Set<string>();
    for (const header of [undefined, '', 'x'.repeat(129), 'has space', 'semi;colon', 'ümlaut', 'a/b']) {
      const { status, id } = await requestIdOf('/healthz', header);
      assert.equal(status, 200);
      assert.match(String(id), UUID, JSON.stringify(header));
      seen.add(String(id));
    }
    assert.equal(seen.size, 7, 'a new id each time');
  });
});
