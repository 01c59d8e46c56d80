// The envelope's own rules beside the payload schemas (events.test.ts): event ids, ordering keys, the company
// id's length, storable text, the body and headers every attempt sends, and the signed links' deadlines.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { envelopeBody, parseWebhookEvent, type WebhookEnvelope } from '../../../events/envelope';
import { webhookHeaders } from '../../../events/delivery-headers';
import { MAX_ORDERING_KEY_LENGTH, orderingKeyOf } from '../../../events/ordering-key';
import { expiredSignedLinks, signedLinkDeadlines, signedLinkKinds } from '../../../events/signed-links';
import { USER_AGENT } from '../../../events/user-agent';
import { webhookSignature } from '../../../events/webhook-signature';

const errorsOf = (input: unknown) => {
  const parsed = parseWebhookEvent(input);
  return parsed.success ? [] : parsed.errors;
};
const update = (data: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  event_type: 'job',
  action: 'update',
  data,
  ...extra,
});

describe('the envelope of a submitted event', () => {
  it('takes an event id of 1 to 128 letters, digits and . _ : -, starting with a letter or digit', () => {
    const message = "must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit";
    assert.deepEqual(errorsOf(update({}, { event_id: `a${'-'.repeat(127)}` })), []);
    for (const id of ['', `a${'b'.repeat(128)}`, '-a', 'a b', 'a/b'])
      assert.deepEqual(errorsOf(update({}, { event_id: id })), [{ path: 'event_id', message }], id);
  });

  it(`takes an ordering key of 1 to ${MAX_ORDERING_KEY_LENGTH} characters, storable`, () => {
    const message = `must be 1 to ${MAX_ORDERING_KEY_LENGTH} characters`;
    assert.deepEqual(errorsOf(update({}, { ordering_key: 'k'.repeat(256) })), []);
    assert.deepEqual(errorsOf(update({}, { ordering_key: '' })), [{ path: 'ordering_key', message }]);
    assert.deepEqual(errorsOf(update({}, { ordering_key: 'k'.repeat(257) })), [{ path: 'ordering_key', message }]);
    assert.deepEqual(
      errorsOf(update({}, { ordering_key: 'a\0' })).map((e) => e.path),
      ['ordering_key'],
    );
  });

  it('names unknown top-level fields, a wrong type or action, and missing data', () => {
    assert.deepEqual(errorsOf({ event_type: 'user', action: 'delete', data: {}, extra: 1 }), [
      { path: 'event_type', message: 'must be one of company, job, candidate' },
      { path: 'action', message: 'must be one of new, update, dynamic_update, signup' },
      { path: 'extra', message: 'unknown field' },
    ]);
    assert.deepEqual(errorsOf({ event_type: 'job', action: 'update' }), [{ path: 'data', message: 'required' }]);
  });

  it('refuses a company id over 255 characters in any event, as company_id or company.id', () => {
    const long = 'c'.repeat(256);
    assert.deepEqual(errorsOf(update({ company_id: 'c'.repeat(255) })), []);
    assert.deepEqual(errorsOf(update({ company_id: long, company: { id: long } })), [
      { path: 'data.company_id', message: 'must be at most 255 characters' },
      { path: 'data.company.id', message: 'must be at most 255 characters' },
    ]);
  });

  it('keeps the data it was given, the event id and ordering key beside it', () => {
    const data = { job: { id: 7 }, custom: { nested: [1, 2] } };
    const parsed = parseWebhookEvent(update(data, { event_id: 'e-1', ordering_key: 'job:7' }));
    assert.ok(parsed.success);
    assert.equal(parsed.event.data, data);
    assert.deepEqual(parsed.event, {
      event_type: 'job',
      action: 'update',
      data,
      event_id: 'e-1',
      ordering_key: 'job:7',
    });
  });

  it('sends exactly event_type, action and data as the body, in that order', () => {
    const event = {
      ordering_key: 'k',
      data: { b: 1, a: 2 },
      action: 'update',
      event_id: 'x',
      event_type: 'job',
    } as unknown as WebhookEnvelope;
    assert.equal(envelopeBody(event), '{"event_type":"job","action":"update","data":{"b":1,"a":2}}');
  });
});

describe('the ordering key of an event', () => {
  it('is the given key, else the entity its type names, by a string or a safe integer id', () => {
    assert.deepEqual(
      [
        orderingKeyOf({ event_type: 'job', data: { job: { id: 7 } } }, 'mine'),
        orderingKeyOf({ event_type: 'company', data: { company_id: 'acme' } }),
        orderingKeyOf({ event_type: 'company', data: { company: { id: 'acme-2' } } }),
        orderingKeyOf({ event_type: 'job', data: { job: { id: 7 } } }),
        orderingKeyOf({ event_type: 'candidate', data: { candidate: { id: 'c-77' } } }),
      ],
      ['mine', 'company:acme', 'company:acme-2', 'job:7', 'candidate:c-77'],
    );
  });

  it('is none without a usable id, for an unknown type, or when it would be too long', () => {
    const keys = [
      orderingKeyOf({ event_type: 'job', data: { job: { id: '' } } }),
      orderingKeyOf({ event_type: 'job', data: { job: { id: 1.5 } } }),
      orderingKeyOf({ event_type: 'job', data: { job: { id: 2 ** 53 } } }),
      orderingKeyOf({ event_type: 'job', data: null }),
      orderingKeyOf({ event_type: 'user', data: { user: { id: 'u' } } }),
      orderingKeyOf({
        event_type: 'candidate',
        data: { candidate: { id: 'c'.repeat(MAX_ORDERING_KEY_LENGTH - 'candidate:'.length + 1) } },
      }),
    ];
    assert.deepEqual(keys, [undefined, undefined, undefined, undefined, undefined, undefined]);
    assert.equal(
      orderingKeyOf({
        event_type: 'candidate',
        data: { candidate: { id: 'c'.repeat(MAX_ORDERING_KEY_LENGTH - 'candidate:'.length) } },
      })?.length,
      256,
    );
  });
});

describe('the headers and signature of a delivery', () => {
  it('carry the token, the webhook id, the timestamp in whole seconds and the user agent', () => {
    assert.match(USER_AGENT, /^partner-integration-service\/\d+\.\d+\.\d+ \(\+webhooks\)$/);
    assert.deepEqual(webhookHeaders('tok', 'w-1', 1_764_000_000_999), {
      'accept-encoding': 'gzip, deflate',
      accept: '*/*',
      connection: 'keep-alive',
      authorization: 'Bearer tok',
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': 'w-1',
      'webhook-timestamp': '1764000000',
    });
  });

  it("carry an ordered webhook's key and sequence first", () => {
    const headers = webhookHeaders('tok', 'w-1', 0, { key: 'job:7', sequence: 12 });
    assert.deepEqual(Object.keys(headers).slice(0, 2), ['webhook-ordering-key', 'webhook-sequence']);
    assert.deepEqual([headers['webhook-ordering-key'], headers['webhook-sequence']], ['job:7', '12']);
  });

  it('sign id.timestamp.body with each secret, space-separated', () => {
    const [a, b] = [Buffer.from('first-secret'), Buffer.from('second-secret')];
    const expected = (secret: Buffer) =>
      `v1,${createHmac('sha256', secret).update('w-1.1764000000.{"a":1}').digest('base64')}`;
    assert.equal(webhookSignature([a, b], 'w-1', '1764000000', '{"a":1}'), `${expected(a)} ${expected(b)}`);
    assert.equal(webhookSignature([a], 'w-1', '1764000000', '{"a":2}') === expected(a), false);
  });
});

describe("a candidate's signed links", () => {
  const event = (candidate: unknown) =>
    ({ event_type: 'candidate', action: 'new', data: { candidate } }) as unknown as WebhookEnvelope;
  const acceptedAt = new Date('2026-11-23T10:00:00Z');
  const both = event({
    files: { cv: 'https://f/cv', cover: null },
    answers: [{ answer_type: 'text' }, { answer_type: 'file' }],
  });

  it('are files (any non-null member) and file answers', () => {
    assert.deepEqual(signedLinkKinds(both), ['files', 'file_answers']);
    assert.deepEqual(signedLinkKinds(event({ files: { cv: null }, answers: [{ answer_type: 'text' }] })), []);
    assert.deepEqual(signedLinkKinds(event('not an object')), []);
  });

  it('expire 24 hours (files) and 2 hours (file answers) after acceptance, not at the deadline itself', () => {
    assert.deepEqual(
      signedLinkDeadlines(both, acceptedAt).map((d) => [d.kind, d.expiresAt.toISOString()]),
      [
        ['files', '2026-11-24T10:00:00.000Z'],
        ['file_answers', '2026-11-23T12:00:00.000Z'],
      ],
    );
    const at = (iso: string) => expiredSignedLinks(both, acceptedAt, new Date(iso));
    assert.deepEqual(
      [at('2026-11-23T12:00:00Z'), at('2026-11-23T12:00:00.001Z'), at('2026-11-24T10:00:00.001Z')],
      [[], ['file_answers'], ['files', 'file_answers']],
    );
  });
});
