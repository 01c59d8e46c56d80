// The subject index (lib/subject-index.ts): which subjects of an event are hashed, in which form (the one
// normaliser ingestion and erasure share), that a kind never matches another kind's value, and which keys a
// process may index with given the deployment's.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { toEnvelope, type WebhookEnvelope, type WebhookEventInput } from '../../../events/envelope';
import { DEVELOPMENT_INDEX_KEY, DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../../lib/at-rest';
import fc from 'fast-check';
import {
  decideIndexKeys,
  EMAIL_ADDRESS_PATTERN,
  eventSubjectKeys,
  indexKeyFingerprint,
  normaliseSubject,
  NOT_BLANK_PATTERN,
  PHONE_NUMBER_PATTERN,
  subjectKey,
  type RegisteredIndexKey,
  type SubjectIndexKey,
  type SubjectKind,
} from '../../../lib/subject-index';
import candidateNew from '../../fixtures/events/candidate-new.json';
import companySignup from '../../fixtures/events/company-signup.json';
import jobNew from '../../fixtures/events/job-new.json';

const SECRET = Buffer.alloc(32, 5);
const hmac = (secret: Buffer, text: string) => createHmac('sha256', secret).update(text).digest('hex');
const envelope = (event: object) => toEnvelope(event as WebhookEventInput);
/** The candidate event with its candidate changed. */
const withCandidate = (changes: Record<string, unknown>): WebhookEnvelope => {
  const event = structuredClone(candidateNew) as { data: { candidate: Record<string, unknown> } };
  Object.assign(event.data.candidate, changes);
  return envelope(event);
};

describe('the subject index', () => {
  it('normalises each kind: ids trimmed; addresses NFC, trimmed, lower-cased, their domain in ASCII; phones to digits with the country code', () => {
    assert.equal(normaliseSubject('email', '  Ada@Example.ORG \n'), 'ada@example.org');
    assert.equal(normaliseSubject('candidate_id', '  C-77\t'), 'C-77');
    // One address, however it is spelled: composed or decomposed umlauts, Unicode or punycode domain.
    const jorg = 'jörg@xn--mller-kva.de';
    for (const spelling of [
      'Jörg@Müller.de',
      'jo\u0308rg@mu\u0308ller.de',
      'JÖRG@xn--mller-kva.de',
      ' jörg@müller.de ',
    ])
      assert.equal(normaliseSubject('email', spelling), jorg, spelling);
    assert.equal(normaliseSubject('email', 'ナ@例え.jp'), 'ナ@xn--r8jz45g.jp');
    for (const phone of ['+44 20 7946 0000', '0044 (20) 7946-0000', '+44.20.7946.0000', '442079460000'])
      assert.equal(normaliseSubject('phone', phone), '442079460000', phone);
  });

  it('says which values are no subject of their kind: blank ids, non-addresses, phone numbers with letters or too few digits', () => {
    for (const value of ['', '   ']) assert.equal(normaliseSubject('candidate_id', value), undefined);
    for (const value of ['', 'nope', 'a@', '@b', 'a b@c.d', 'a@b@c'])
      assert.equal(normaliseSubject('email', value), undefined, value);
    for (const value of ['', '12345', 'call me', '+44 20 EXT 1', '1@2'])
      assert.equal(normaliseSubject('phone', value), undefined, value);
  });

  it('normalises every value its documented patterns accept (fast-check, 2,000 each): what ingestion and the API accept can be erased', () => {
    const kinds: Array<[SubjectKind, RegExp]> = [
      ['email', EMAIL_ADDRESS_PATTERN],
      ['phone', PHONE_NUMBER_PATTERN],
      ['candidate_id', NOT_BLANK_PATTERN],
    ];
    for (const [kind, pattern] of kinds) {
      fc.assert(
        fc.property(fc.stringMatching(pattern), (value) => normaliseSubject(kind, value) !== undefined),
        { numRuns: 2000 },
      );
    }
  });

  it('keys a subject with HMAC-SHA256 of kind and normalised value under the secret, in hex; no key for a non-subject', () => {
    assert.equal(subjectKey(SECRET, 'email', ' Ada@Example.org'), hmac(SECRET, 'email:ada@example.org'));
    assert.equal(subjectKey(SECRET, 'candidate_id', 'c-77 '), hmac(SECRET, 'candidate_id:c-77'));
    assert.equal(subjectKey(SECRET, 'phone', '+1 (555) 010-0000'), hmac(SECRET, 'phone:15550100000'));
    assert.match(subjectKey(SECRET, 'email', 'ada@example.org')!, /^[0-9a-f]{64}$/);
    assert.equal(subjectKey(SECRET, 'email', 'ADA@example.org'), subjectKey(SECRET, 'email', 'ada@example.org'));
    assert.notEqual(
      subjectKey(SECRET, 'candidate_id', 'C-77'),
      subjectKey(SECRET, 'candidate_id', 'c-77'),
      'ids keep their case',
    );
    assert.equal(subjectKey(SECRET, 'email', 'nope'), undefined);
  });

  it('keeps kinds apart: an id spelled like an address or a phone never matches that address or phone', () => {
    assert.notEqual(
      subjectKey(SECRET, 'candidate_id', 'ada@example.org'),
      subjectKey(SECRET, 'email', 'ada@example.org'),
    );
    assert.notEqual(subjectKey(SECRET, 'candidate_id', '442079460000'), subjectKey(SECRET, 'phone', '442079460000'));
  });

  it('depends on the secret: another key gives other keys', () => {
    assert.notEqual(
      subjectKey(SECRET, 'email', 'ada@example.org'),
      subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email', 'ada@example.org'),
    );
    assert.equal(
      subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email', 'ada@example.org'),
      hmac(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email:ada@example.org'),
    );
  });

  it("indexes a candidate event by the candidate's id and phone, and every address in the body: the candidate's and the request author's", () => {
    const { candidate } = candidateNew.data;
    assert.deepEqual(eventSubjectKeys(SECRET, envelope(candidateNew)), [
      hmac(SECRET, `candidate_id:${candidate.id}`),
      hmac(SECRET, `phone:${normaliseSubject('phone', candidate.phone_number)}`),
      hmac(SECRET, `email:${candidate.email}`),
      hmac(SECRET, `email:${candidate.request_author.email}`),
    ]);
  });

  it('finds addresses inside the message, the answers and the custom fields (values and names), in any script', () => {
    const keys = eventSubjectKeys(
      SECRET,
      withCandidate({
        email: 'n/a',
        phone_number: '',
        request_author: undefined,
        message: 'Please write to Jörg@Müller.de, or (better) <second@example.org>.',
        answers: [{ id: 1, question_id: 2, answer_type: 'text', text: 'my old address: third@example.org!' }],
        data: { 'fourth@example.org': 'yes', referee: ['x', 'Fifth@Example.org'] },
      }),
    );
    const expected = [
      'jörg@xn--mller-kva.de',
      'second@example.org',
      'third@example.org',
      'fourth@example.org',
      'fifth@example.org',
    ].map((address) => hmac(SECRET, `email:${address}`));
    assert.deepEqual(
      [...keys].sort(),
      [hmac(SECRET, 'candidate_id:c-77'), ...expected].sort(),
      'the id and one key per address, nothing else',
    );
  });

  it('indexes an address once when the author is the candidate, and skips a missing, empty or non-text subject', () => {
    const candidateKeys = [hmac(SECRET, 'candidate_id:c-77'), hmac(SECRET, 'email:ada@example.org')];
    const noPhone = { phone_number: 'none' };
    assert.deepEqual(
      eventSubjectKeys(SECRET, withCandidate({ ...noPhone, request_author: { email: ' ADA@example.org ' } })),
      candidateKeys,
    );
    assert.deepEqual(eventSubjectKeys(SECRET, withCandidate({ ...noPhone, request_author: undefined })), candidateKeys);
    assert.deepEqual(
      eventSubjectKeys(SECRET, withCandidate({ ...noPhone, request_author: { email: '   ' }, email: null })),
      [hmac(SECRET, 'candidate_id:c-77')],
    );
    assert.deepEqual(
      eventSubjectKeys(SECRET, withCandidate({ ...noPhone, id: 77, email: '', request_author: null })),
      [],
    );
  });

  it('indexes nothing of a company or a job event without an address', () => {
    assert.deepEqual(eventSubjectKeys(SECRET, envelope(companySignup)), []);
    assert.deepEqual(eventSubjectKeys(SECRET, envelope(jobNew)), []);
  });
});

describe('the keys a process may index with (decideIndexKeys)', () => {
  const key = (id: string, fill: number): SubjectIndexKey => ({ id, key: Buffer.alloc(32, fill) });
  const [k1, k2] = [key('k1', 1), key('k2', 2)];
  const registered = (...keys: Array<SubjectIndexKey & { retired?: boolean }>): RegisteredIndexKey[] =>
    keys.map((k) => ({ id: k.id, fingerprint: indexKeyFingerprint(k), retired: k.retired ?? false }));

  it('indexes with the newest configured key and searches under every configured one, plus the development key while rows use it', () => {
    assert.deepEqual(decideIndexKeys(registered(k1), [k2, k1], DEVELOPMENT_INDEX_KEY), {
      writeWith: k2,
      searchUnder: [k2, k1],
    });
    assert.deepEqual(decideIndexKeys(registered(DEVELOPMENT_INDEX_KEY), [k1], DEVELOPMENT_INDEX_KEY), {
      writeWith: k1,
      searchUnder: [k1, DEVELOPMENT_INDEX_KEY],
    });
    assert.deepEqual(decideIndexKeys(registered(k1, { ...k2, retired: true }), [k1], DEVELOPMENT_INDEX_KEY), {
      writeWith: k1,
      searchUnder: [k1],
    });
  });

  it('without a key, indexes only in a development deployment; refuses in a keyed or a new one, never falling back', () => {
    assert.deepEqual(decideIndexKeys(registered(DEVELOPMENT_INDEX_KEY), [], DEVELOPMENT_INDEX_KEY), {
      writeWith: DEVELOPMENT_INDEX_KEY,
      searchUnder: [DEVELOPMENT_INDEX_KEY],
    });
    assert.throws(() => decideIndexKeys([], [], DEVELOPMENT_INDEX_KEY), {
      name: 'SubjectIndexKeyError',
      message:
        'SUBJECT_INDEX_KEYS is not set: set it (docs/personal-data.md#index-keys); only partner-service start indexes with the public development key',
    });
    assert.throws(() => decideIndexKeys(registered(DEVELOPMENT_INDEX_KEY, k1), [], DEVELOPMENT_INDEX_KEY), {
      message:
        "SUBJECT_INDEX_KEYS is not set, but this deployment indexes personal data under key k1: give this process the deployment's SUBJECT_INDEX_KEYS",
    });
  });

  it('refuses another key under a registered id, a key list that lacks a key still in use, and a retired key first', () => {
    assert.throws(() => decideIndexKeys(registered({ ...k1, retired: true }, k2), [k1, k2], DEVELOPMENT_INDEX_KEY), {
      message: "SUBJECT_INDEX_KEYS lists key k1 first, which a reindex retired: put the deployment's newest key first",
    });
    assert.throws(
      () => decideIndexKeys(registered(k1), [{ id: 'k1', key: Buffer.alloc(32, 9) }], DEVELOPMENT_INDEX_KEY),
      {
        message:
          'SUBJECT_INDEX_KEYS gives key id k1 another key than the one this deployment indexed under with that id',
      },
    );
    assert.throws(() => decideIndexKeys(registered(k1), [k2], DEVELOPMENT_INDEX_KEY), {
      message:
        'this deployment indexes personal data under key k1, which SUBJECT_INDEX_KEYS does not list: keep it listed until partner-service personal-data reindex retires it',
    });
  });
});
