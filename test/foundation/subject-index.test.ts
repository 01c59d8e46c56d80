// The subject index (lib/subject-index.ts): which subjects of an event are hashed, in which form, and that a
// kind never matches another kind's value.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { toEnvelope, type WebhookEnvelope, type WebhookEventInput } from '../../events/envelope';
import { DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../lib/at-rest';
import { eventSubjectKeys, normaliseSubject, subjectKey } from '../../lib/subject-index';
import candidateNew from '../fixtures/events/candidate-new.json';
import companySignup from '../fixtures/events/company-signup.json';
import jobNew from '../fixtures/events/job-new.json';

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
  it('normalises an address by trimming and lower-casing it, and an id by trimming it alone', () => {
    assert.equal(normaliseSubject('email', '  Ada@Example.ORG \n'), 'ada@example.org');
    assert.equal(normaliseSubject('candidate_id', '  C-77\t'), 'C-77');
  });

  it('keys a subject with HMAC-SHA256 of kind and normalised value under the secret, in hex', () => {
    assert.equal(subjectKey(SECRET, 'email', ' Ada@Example.org'), hmac(SECRET, 'email:ada@example.org'));
    assert.equal(subjectKey(SECRET, 'candidate_id', 'c-77 '), hmac(SECRET, 'candidate_id:c-77'));
    assert.match(subjectKey(SECRET, 'email', 'ada@example.org'), /^[0-9a-f]{64}$/);
    assert.equal(subjectKey(SECRET, 'email', 'ADA@example.org'), subjectKey(SECRET, 'email', 'ada@example.org'));
    assert.notEqual(subjectKey(SECRET, 'candidate_id', 'C-77'), subjectKey(SECRET, 'candidate_id', 'c-77'), 'ids keep their case');
  });

  it('keeps kinds apart: an id spelled like an address never matches that address', () => {
    assert.notEqual(subjectKey(SECRET, 'candidate_id', 'ada@example.org'), subjectKey(SECRET, 'email', 'ada@example.org'));
  });

  it('depends on the secret: another key gives other keys', () => {
    assert.notEqual(subjectKey(SECRET, 'email', 'ada@example.org'), subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email', 'ada@example.org'));
    assert.equal(subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email', 'ada@example.org'), hmac(DEVELOPMENT_SUBJECT_INDEX_KEY, 'email:ada@example.org'));
  });

  it("indexes a candidate event by the candidate's id and e-mail and the request author's e-mail, in that order", () => {
    const { candidate } = candidateNew.data;
    assert.deepEqual(eventSubjectKeys(SECRET, envelope(candidateNew)), [
      hmac(SECRET, `candidate_id:${candidate.id}`),
      hmac(SECRET, `email:${candidate.email}`),
      hmac(SECRET, `email:${candidate.request_author.email}`),
    ]);
  });

  it('indexes an address once when the author is the candidate, and skips a missing, empty or non-text subject', () => {
    const candidateKeys = [hmac(SECRET, 'candidate_id:c-77'), hmac(SECRET, 'email:ada@example.org')];
    assert.deepEqual(eventSubjectKeys(SECRET, withCandidate({ request_author: { email: ' ADA@example.org ' } })), candidateKeys);
    assert.deepEqual(eventSubjectKeys(SECRET, withCandidate({ request_author: undefined })), candidateKeys);
    assert.deepEqual(eventSubjectKeys(SECRET, withCandidate({ request_author: { email: '   ' }, email: null })), [hmac(SECRET, 'candidate_id:c-77')]);
    assert.deepEqual(eventSubjectKeys(SECRET, withCandidate({ id: 77, email: '' , request_author: null })), []);
  });

  it('indexes nothing of a company or a job event: they name no candidate', () => {
    assert.deepEqual(eventSubjectKeys(SECRET, envelope(companySignup)), []);
    assert.deepEqual(eventSubjectKeys(SECRET, envelope(jobNew)), []);
  });
});
