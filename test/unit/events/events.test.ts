import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseWebhookEvent, companyIdOf, toEnvelope, type WebhookEventInput } from '../../../events';
import candidateNew from '../../fixtures/events/candidate-new.json';
import candidateShort from '../../fixtures/events/candidate-new-short.json';
import companySignup from '../../fixtures/events/company-signup.json';
import jobDynamicUpdate from '../../fixtures/events/job-dynamic-update.json';
import jobNew from '../../fixtures/events/job-new.json';

type Json = Record<string, any>;
const clone = <T>(value: T): T => structuredClone(value);

/** The errors of an event after `mutate` changed a copy of it. */
function errorsAfter(base: Json, mutate: (event: Json) => void) {
  const event = clone(base);
  mutate(event);
  const result = parseWebhookEvent(event);
  return result.success ? [] : result.errors;
}

describe('webhook event schemas', () => {
  it('accept the full payloads of company/signup, job/new and candidate/new and the shortened candidate sample', () => {
    for (const event of [companySignup, jobNew, candidateNew, candidateShort, jobDynamicUpdate]) {
      const result = parseWebhookEvent(event);
      assert.ok(result.success, JSON.stringify(!result.success && result.errors));
    }
  });

  it('accept the shortened samples that omit the fields only the full payload carries', () => {
    const company = clone(companySignup) as Json;
    delete company.data.internal_id;
    delete company.data.settings;
    assert.deepEqual(
      errorsAfter(company, () => {}),
      [],
    );
    const job = clone(jobNew) as Json;
    for (const field of ['internal_id', 'internal_reference', 'requisition', 'layers', 'categories', 'departments'])
      delete job.data.job[field];
    assert.deepEqual(
      errorsAfter(job, () => {}),
      [],
    );
  });

  it('pass unknown fields through unchanged, at every level', () => {
    const event = clone(candidateNew) as Json;
    event.data.partner_extra = { nested: [1, 'two'] };
    event.data.candidate.status.color = 'green';
    event.data.job.locations[0].location_json.zip = '10115';
    const result = parseWebhookEvent(event);
    assert.ok(result.success);
    assert.deepEqual(result.event.data, event.data);
    assert.strictEqual(result.event.data, event.data, 'the data delivered is the data received');
    assert.deepEqual(toEnvelope(result.event), { event_type: 'candidate', action: 'new', data: event.data });
  });

  it('check dates, datetimes, status groups, source types, file URLs, alpha-2 codes and e-mails', () => {
    assert.deepEqual(
      errorsAfter(candidateNew, (e) => {
        e.data.job.from_date = '2025-3-1';
        e.data.job.to_date = '2025-02-29';
        e.data.candidate.application_dt_created = '2025-03-01 24:00:00';
        e.data.candidate.status.group = '0';
        e.data.candidate.source_type = 'referral';
        e.data.candidate.files.cover_letter = 'ftp://files.example.com/x';
        e.data.candidate.files.other_1 = null;
        e.data.job.language = 'english';
        e.data.job.locations[0].location_json.country_short = 'DEU';
        e.data.candidate.request_author.email = 'not-an-email';
        e.data.company.internal_id = 12.5;
      }),
      [
        { path: 'data.company.internal_id', message: 'must be an integer' },
        { path: 'data.candidate.status.group', message: 'must be one of 0, 1, 19, 20, 21' },
        { path: 'data.candidate.files.cover_letter', message: 'must be an http:// or https:// URL' },
        { path: 'data.candidate.application_dt_created', message: 'must be a datetime shaped YYYY-MM-DD HH:MM:SS' },
        {
          path: 'data.candidate.source_type',
          message:
            'must be one of applied, applied-silent, copied, imported, recommended, sourced, uploaded, uploaded-extension',
        },
        { path: 'data.candidate.request_author.email', message: 'must be an e-mail address' },
        { path: 'data.job.from_date', message: 'must be a date shaped YYYY-MM-DD' },
        { path: 'data.job.to_date', message: 'must be a date shaped YYYY-MM-DD' },
        { path: 'data.job.locations[0].location_json.country_short', message: 'must be a two-letter (alpha-2) code' },
        { path: 'data.job.language', message: 'must be a two-letter (alpha-2) code' },
      ],
    );
  });

  it('accept every status group and source type the spec lists', () => {
    for (const group of [0, 1, 19, 20, 21])
      assert.deepEqual(
        errorsAfter(candidateNew, (e) => (e.data.candidate.status.group = group)),
        [],
      );
    for (const source of [
      'applied',
      'applied-silent',
      'copied',
      'imported',
      'recommended',
      'sourced',
      'uploaded',
      'uploaded-extension',
    ]) {
      assert.deepEqual(
        errorsAfter(candidateNew, (e) => (e.data.candidate.source_type = source)),
        [],
      );
    }
  });

  it('name each missing required field by its path, array indexes included', () => {
    assert.deepEqual(
      errorsAfter(jobNew, (e) => {
        delete e.data.job.title;
        delete e.data.company.settings;
        delete e.data.job.layers[0].layer_name;
        e.data.job.categories.push({ id: 'x', text: 'y' });
      }),
      [
        { path: 'data.company.settings', message: 'required' },
        { path: 'data.job.title', message: 'required' },
        { path: 'data.job.layers[0].layer_name', message: 'required' },
        { path: 'data.job.categories[1].id', message: 'must be an integer' },
      ],
    );
  });

  it('in a candidate event accept layers with only id, name and layer_name, as the sample has them', () => {
    assert.deepEqual(
      errorsAfter(candidateNew, (e) => (e.data.job.layers = [{ id: 1, name: 'n', layer_name: 'v' }])),
      [],
    );
    assert.deepEqual(
      errorsAfter(jobNew, (e) => (e.data.job.layers = [{ id: 1, name: 'n', layer_name: 'v' }])),
      [
        { path: 'data.job.layers[0].external_identifier', message: 'required' },
        { path: 'data.job.layers[0].description', message: 'required' },
      ],
    );
  });

  it('require data to be a JSON object for the pairs the spec does not show', () => {
    for (const data of [[], 'text', 3, null]) {
      assert.deepEqual(
        errorsAfter(jobDynamicUpdate, (e) => (e.data = data)),
        [{ path: 'data', message: 'must be a JSON object' }],
      );
    }
  });

  it('find the company id of an event, and nothing personal', () => {
    assert.equal(companyIdOf(companySignup as WebhookEventInput), 'acme');
    assert.equal(companyIdOf(candidateNew as WebhookEventInput), 'acme');
    assert.equal(companyIdOf({ data: { company: { id: 42 } } }), undefined);
    assert.equal(companyIdOf({ data: {} }), undefined);
  });
});

describe('examples/events', () => {
  const folder = path.join(__dirname, '..', '..', '..', 'examples', 'events');

  it('holds one valid event, without an event_id, for each type/action pair the spec shows', () => {
    const files = readdirSync(folder)
      .filter((f) => f.endsWith('.json'))
      .sort();
    assert.deepEqual(files, ['candidate-new.json', 'company-signup.json', 'job-new.json']);
    for (const file of files) {
      const event = JSON.parse(readFileSync(path.join(folder, file), 'utf8'));
      const parsed = parseWebhookEvent(event);
      assert.ok(parsed.success, `${file}: ${JSON.stringify(!parsed.success && parsed.errors)}`);
      assert.equal(`${event.event_type}-${event.action}.json`, file);
      assert.equal(event.event_id, undefined, `${file}: each send gets a new event_id`);
    }
  });
});
