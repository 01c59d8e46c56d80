// The webhook catalog of /openapi.json, checked with Ajv (independent of zod) against every example and
// fixture event, the bodies and headers the real activity sends, and broken variants the service refuses.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { postWebhook } from '../../partner-client/http-delivery';
import { envelopeBody, parseWebhookEvent, toEnvelope, type WebhookEventInput } from '../../events/envelope';
import { URL_PATTERN } from '../../events/fields';
import { documentSchemas, openApi31Validator, type Doc } from '../support/openapi';
import { startTestApi, type TestApi } from '../support/api';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

const ROOT = path.resolve(__dirname, '..', '..');
const EVENT_FILES = ['examples/events', 'test/fixtures/events'].flatMap((dir) =>
  readdirSync(path.join(ROOT, dir))
    .filter((f) => f.endsWith('.json'))
    .map((f) => path.join(dir, f)),
);
const readEvent = (file: string): WebhookEventInput => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const SPECIFIED = ['company/signup', 'job/new', 'candidate/new'];
const entryOf = (event: { event_type: string; action: string }) => {
  const pair = `${event.event_type}/${event.action}`;
  return SPECIFIED.includes(pair) ? pair : 'other';
};

/** Broken variants of a specified event, each with the path the service names when it refuses it. */
const BREAKS: Record<string, Array<[string, (data: any) => void]>> = {
  'company/signup': [
    ['data.dt_created', (d) => (d.dt_created = '2024-02-30 10:00:00')],
    ['data.has_config', (d) => (d.has_config = 'yes')],
    ['data.company_id', (d) => delete d.company_id],
  ],
  'job/new': [
    ['data.job.from_date', (d) => (d.job.from_date = '2024-13-01')],
    ['data.job.ad_url', (d) => (d.job.ad_url = 'ftp://jobs.example.test/1')],
    [
      'data.job.locations[0].location_json.country_short',
      (d) => (d.job.locations[0].location_json.country_short = 'DEU'),
    ],
    ['data.company.internal_id', (d) => (d.company.internal_id = 1.5)],
  ],
  'candidate/new': [
    ['data.candidate.status.group', (d) => (d.candidate.status.group = 2)],
    [
      'data.candidate.files.cv',
      (d) => (
        (d.candidate.files ??= {}),
        Object.assign(d.candidate.files, {
          cv: 'not a url',
          cover_letter: null,
          other_1: null,
          other_2: null,
          other_3: null,
          other_4: null,
          other_5: null,
        })
      ),
    ],
    ['data.candidate.source_type', (d) => (d.candidate.source_type = 'walked-in')],
    [
      'data.candidate.request_author.email',
      (d) => (d.candidate.request_author = { email: 'nobody', first_name: 'A', last_name: 'B' }),
    ],
    ['data.job.layers[0].id', (d) => (d.job.layers = [{ id: 'one', name: 'n', layer_name: 'l' }])],
  ],
};

describe('webhook catalog in /openapi.json', function () {
  this.timeout(30_000);
  let api: TestApi;
  let doc: Doc;
  let schemaAt: ReturnType<typeof documentSchemas>;
  let partner: PartnerServer;
  const bodyOf = (entry: string) =>
    schemaAt(doc.webhooks[entry].post.requestBody.content['application/json'].schema.$ref);
  const ingestion = () => schemaAt('#/components/schemas/WebhookEvent');
  const errorsOf = (validate: { errors?: unknown }) => JSON.stringify(validate.errors);

  before(async () => {
    api = await startTestApi({ INTERNAL_API_TOKEN: INTERNAL_TOKEN });
    doc = await (await fetch(`${api.api.url}/openapi.json`)).json();
    schemaAt = documentSchemas(doc);
    partner = await startPartnerServer();
  });
  after(async () => {
    await partner.close();
    await api.close();
  });

  it('is a valid OpenAPI 3.1 document with one entry per specified event and one for the other pairs', () => {
    const validate = openApi31Validator();
    assert.equal(validate(doc), true, JSON.stringify(validate.errors, null, 2));
    assert.deepEqual(Object.keys(doc.webhooks), ['company/signup', 'job/new', 'candidate/new', 'other']);
    assert.deepEqual(
      doc.components.schemas.WebhookEvent.oneOf.map((s: { $ref: string }) => s.$ref),
      [
        '#/components/schemas/CompanySignupEvent',
        '#/components/schemas/JobNewEvent',
        '#/components/schemas/CandidateNewEvent',
        '#/components/schemas/OtherEvent',
      ],
    );
  });

  it('writes down the spec types: date, datetime, url, status groups, source types, files as url or null', () => {
    const candidate = doc.components.schemas.CandidateNewWebhook.properties.data.properties.candidate.properties;
    assert.deepEqual(
      candidate.status.properties.group.anyOf.map((g: { const: number }) => g.const),
      [0, 1, 19, 20, 21],
    );
    assert.deepEqual(candidate.source_type.enum, [
      'applied',
      'applied-silent',
      'copied',
      'imported',
      'recommended',
      'sourced',
      'uploaded',
      'uploaded-extension',
    ]);
    // The pattern is the check (every match passes the URL parser); `format: uri` would promise `HTTP:` too.
    assert.deepEqual(candidate.files.properties.cv.anyOf, [{ type: 'string', pattern: URL_PATTERN }, { type: 'null' }]);
    // zod's e-mail check is its pattern, which `format: email` does not agree with; the pattern is kept alone.
    assert.equal(candidate.request_author.properties.email.format, undefined);
    assert.match('ada@example.test', new RegExp(candidate.request_author.properties.email.pattern));
    const job = doc.components.schemas.JobNewWebhook.properties.data.properties.job;
    assert.equal(job.properties.from_date.format, 'date');
    assert.deepEqual(job.required, [
      'id',
      'title',
      'from_date',
      'to_date',
      'description',
      'skills',
      'locations',
      'experience',
      'language',
      'ad_url',
      'settings',
    ]);
    const signup = doc.components.schemas.CompanySignupWebhook;
    assert.deepEqual(signup.properties.data.required, ['company_id', 'company_name', 'has_config', 'dt_created']);
    assert.match(signup.description, /Optional here: data\.internal_id, data\.settings\./);
    assert.equal(signup.additionalProperties, false);
  });

  for (const file of EVENT_FILES) {
    it(`${file}: valid as an ingestion request and, as delivered, against its catalog entry`, () => {
      const event = readEvent(file);
      const request = ingestion();
      assert.equal(request(event), true, errorsOf(request));
      const parsed = parseWebhookEvent(event);
      assert.ok(parsed.success);
      // The bytes the activity POSTs, built by the activity's own body builder.
      const delivered = JSON.parse(envelopeBody(toEnvelope(parsed.event)));
      const validate = bodyOf(entryOf(event));
      assert.equal(validate(delivered), true, errorsOf(validate));
      // The partner never receives event_id: the delivered body's entry refuses it.
      assert.equal(validate({ ...delivered, event_id: 'x' }), false);
    });
  }

  for (const [pair, breaks] of Object.entries(BREAKS)) {
    it(`${pair}: each broken variant is refused by the catalog entry, the ingestion schema and the service`, () => {
      const file = EVENT_FILES.find((f) => entryOf(readEvent(f)) === pair && !f.includes('short'))!;
      for (const [errorPath, breakIt] of breaks) {
        const event = structuredClone(readEvent(file)) as any;
        breakIt(event.data);
        const { event_id: _id, ...body } = event;
        assert.equal(bodyOf(pair)(body), false, `${errorPath}: the catalog accepts it`);
        assert.equal(ingestion()(event), false, `${errorPath}: the ingestion schema accepts it`);
        const parsed = parseWebhookEvent(event);
        assert.equal(parsed.success, false);
        assert.deepEqual(!parsed.success && parsed.errors.map((e) => e.path), [errorPath]);
      }
    });
  }

  it("refuses the issue's example, a specified pair with empty data, in both the catalog and the ingestion body", () => {
    for (const [eventType, action] of SPECIFIED.map((p) => p.split('/'))) {
      const event = { event_type: eventType, action, data: {} };
      assert.equal(ingestion()(event), false, `${eventType}/${action}`);
      assert.equal(bodyOf(`${eventType}/${action}`)(event), false);
      assert.equal(bodyOf('other')(event), false, 'the other-pairs envelope must not take a specified pair');
    }
    assert.equal(ingestion()({ event_type: 'job', action: 'update', data: {} }), true);
    assert.equal(ingestion()({ event_type: 'job', action: 'update', data: { company_id: 'c'.repeat(256) } }), false);
  });

  it('describes every header a real signed, ordered delivery carries, and each value matches its schema', async () => {
    const event = readEvent('examples/events/candidate-new.json');
    const settings = {
      endpoint: partner.url,
      token: PARTNER_TOKEN,
      timeoutMs: 5000,
      signingSecrets: [Buffer.from('a'.repeat(32)), Buffer.from('b'.repeat(32))],
    };
    const ordering = { key: 'candidate:c-77', sequence: 12 };
    const outcome = await postWebhook(settings, {
      webhookId: '0b0e8a34-3c1e-4d6f-9a0b-5e2f7c1d9e01',
      attempt: 1,
      event: toEnvelope(event),
      ordering,
    });
    assert.equal(outcome.httpStatus, 200);
    const received = partner.requests.at(-1)!;
    const operation = doc.webhooks['candidate/new'].post;
    const documented = operation.parameters.map((p: { name: string }) => p.name);
    // Host and Content-Length are the transport's; Authorization and Content-Type are stated by the security
    // scheme and the request body, as OpenAPI wants.
    const sent = Object.keys(received.headers).filter(
      (h) => !['host', 'content-length', 'authorization', 'content-type'].includes(h),
    );
    assert.deepEqual([...sent].sort(), [...documented].sort());
    for (const parameter of operation.parameters) {
      const validate = schemaAt(
        `#/webhooks/candidate~1new/post/parameters/${documented.indexOf(parameter.name)}/schema`,
      );
      assert.equal(
        validate(received.headers[parameter.name]),
        true,
        `${parameter.name}: ${received.headers[parameter.name]}`,
      );
    }
    assert.equal(String(received.headers['webhook-signature']).split(' ').length, 2);
    assert.deepEqual(
      [received.headers['webhook-ordering-key'], received.headers['webhook-sequence']],
      ['candidate:c-77', '12'],
    );
    const optional = operation.parameters
      .filter((p: { required: boolean }) => !p.required)
      .map((p: { name: string }) => p.name)
      .sort();
    assert.deepEqual(optional, ['webhook-ordering-key', 'webhook-sequence', 'webhook-signature']);
    assert.deepEqual(operation.security, [{ PartnerToken: [] }]);
    assert.deepEqual(doc.components.securitySchemes.PartnerToken.scheme, 'bearer');
    assert.equal(received.headers.authorization, `Bearer ${PARTNER_TOKEN}`);
    assert.equal(received.headers['content-type'], 'application/json');
    assert.equal(bodyOf('candidate/new')(JSON.parse(received.body)), true);
  });
});
