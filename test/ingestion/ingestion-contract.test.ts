// Schemathesis-style: requests generated from the document's own request body of POST /internal/v1/webhooks
// go to the real API (real PostgreSQL, the real Temporal gateway on a dev server, recorded); none may be
// refused as invalid. Every generated request is first checked with Ajv, so the generator cannot cheat.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startApiServer, type ApiServer } from '../../api/server';
import { createTemporalGateway } from '../../temporal/gateway';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import type { DevServer } from '../../temporal/dev-server';
import { useTestDatabase } from '../support/database';
import { documentSchemas, type Doc } from '../support/openapi';
import { schemaArbitrary } from '../support/schema-arbitrary';
import { startTestDevServer } from '../support/temporal';
import { RecordingGateway } from '../support/recording-gateway';
import { postWebhook, submitWebhook } from '../support/api';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const logger = createLogger('silent');
const RUNS = 150;

describe('POST /internal/v1/webhooks accepts every request its documented body allows', function () {
  this.timeout(120_000);
  const db = useTestDatabase();
  let server: DevServer;
  let gateway: RecordingGateway;
  let api: ApiServer;
  let doc: Doc;

  before(async () => {
    server = await startTestDevServer();
    const env = {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: 'ingestion-contract-test',
    };
    gateway = new RecordingGateway(createTemporalGateway(loadConfig(env), logger));
    api = await startApiServer(
      {
        config: loadConfig({ PARTNER_ACCESS_TOKEN: PARTNER_TOKEN, ...env }),
        knex: db.knex,
        logger,
        temporalGateway: gateway,
      },
      0,
      '127.0.0.1',
    );
    doc = await (await fetch(`${api.url}/openapi.json`)).json();
  });
  after(async () => {
    await api.close();
    await gateway.close();
    await server.stop();
  });

  it(`${RUNS} generated requests: each is schema-valid and the API starts it (202, or 200 for a repeated event_id)`, async () => {
    const body = doc.paths['/internal/v1/webhooks'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(body, { $ref: '#/components/schemas/WebhookEvent' });
    const valid = documentSchemas(doc)(body.$ref);
    // `not` (the other-pairs branch must not be a specified pair) is left to the validator.
    const requests = schemaArbitrary(doc, body).filter((request) => valid(request) === true);
    const pairs = new Set<string>();
    await fc.assert(
      fc.asyncProperty(requests, async (request) => {
        const response = await postWebhook(api.url, INTERNAL_TOKEN, request);
        const answer = await response.text();
        assert.ok([200, 202].includes(response.status), `${response.status} ${answer} for ${JSON.stringify(request)}`);
        const { event_type, action } = request as { event_type: string; action: string };
        pairs.add(`${event_type}/${action}`);
      }),
      { numRuns: RUNS },
    );
    // Every specified event and some other pair were generated, so each branch of the oneOf was exercised.
    for (const pair of ['company/signup', 'job/new', 'candidate/new'])
      assert.ok(pairs.has(pair), `${pair} never generated`);
    assert.ok([...pairs].some((p) => !['company/signup', 'job/new', 'candidate/new'].includes(p)));
    assert.equal(gateway.starts.length >= 1, true);
  });

  it('the generator is not vacuous: a request the document refuses is refused by the API too', async () => {
    const valid = documentSchemas(doc)('#/components/schemas/WebhookEvent');
    const refused = { event_type: 'job', action: 'new', data: {} };
    assert.equal(valid(refused), false);
    await submitWebhook(api.url, INTERNAL_TOKEN, refused, { status: 400 });
  });
});
