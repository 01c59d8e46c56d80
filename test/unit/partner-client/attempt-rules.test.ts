// How one attempt's answer is judged, without a partner server: the error class of a request that got no
// answer, the partner's answer as the breaker reads it, a Retry-After's delay, and the 4 KiB of body that is kept.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { classifyRequestError } from '../../../partner-client/error-class';
import { readBodyPrefix, utf8Prefix } from '../../../partner-client/response-body';
import { RETRY_AFTER_CAP_MS, retryAfterMs } from '../../../partner-client/retry-after';
import { partnerAnswer } from '../../../lib/partner-states';

/** undici's shape: a TypeError('fetch failed') whose cause is the socket's error. */
const wrapped = (code: string, message = `${code} happened`) =>
  Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(message), { code }) });

describe('the error class of a request with no answer', () => {
  it('finds the code along the cause chain, in order: timeout, refused, dns, tls, reset, other', () => {
    const classes = [
      'UND_ERR_HEADERS_TIMEOUT',
      'ECONNREFUSED',
      'EAI_AGAIN',
      'CERT_HAS_EXPIRED',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'ECONNRESET',
      'UND_ERR_SOCKET',
      'EHOSTUNREACH',
    ].map((code) => classifyRequestError(wrapped(code), false).errorClass);
    assert.deepEqual(classes, ['timeout', 'connection_refused', 'dns', 'tls', 'tls', 'reset', 'reset', 'other']);
  });

  it('describes the deepest error of the chain with its code', () => {
    assert.deepEqual(classifyRequestError(wrapped('ENOTFOUND', 'getaddrinfo ENOTFOUND partner.invalid'), false), {
      errorClass: 'dns',
      errorMessage: 'ENOTFOUND: getaddrinfo ENOTFOUND partner.invalid',
    });
  });

  it('calls a request the service aborted at its deadline a timeout, whatever its error says', () => {
    assert.deepEqual(classifyRequestError(wrapped('ECONNRESET'), true), {
      errorClass: 'timeout',
      errorMessage: 'no response within the per-attempt timeout (PARTNER_TIMEOUT_MS)',
    });
  });

  it('reads TLS from a message without a code, and cuts a message to 500 characters', () => {
    assert.equal(
      classifyRequestError(
        new Error('Client network socket disconnected before secure TLS connection was established'),
        false,
      ).errorClass,
      'tls',
    );
    const long = classifyRequestError(new Error('x'.repeat(600)), false);
    assert.deepEqual([long.errorClass, long.errorMessage.length], ['other', 500]);
  });

  it('describes a thrown value that is not an error', () => {
    assert.deepEqual(classifyRequestError('socket hang up', false), {
      errorClass: 'other',
      errorMessage: 'socket hang up',
    });
  });
});

describe("the breaker's reading of an answer (partnerAnswer)", () => {
  it('counts no answer, a 5XX and a 429 as failing, anything else (4XX included) as answered', () => {
    const statuses = [null, 500, 503, 599, 429, 200, 204, 302, 400, 404, 410, 499];
    assert.deepEqual(statuses.map(partnerAnswer), [
      'failing',
      'failing',
      'failing',
      'failing',
      'failing',
      'answered',
      'answered',
      'answered',
      'answered',
      'answered',
      'answered',
      'answered',
    ]);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-23T10:00:00Z');

  it('reads delay-seconds and an HTTP date, from a 429 or a 503 only', () => {
    assert.equal(retryAfterMs(429, '120', now), 120_000);
    assert.equal(retryAfterMs(503, ' 0 ', now), 0);
    assert.equal(retryAfterMs(503, 'Mon, 23 Nov 2026 10:00:30 GMT', now), 30_000);
    assert.equal(retryAfterMs(503, ['7', '9'], now), 7_000);
    assert.equal(retryAfterMs(500, '120', now), undefined);
    assert.equal(retryAfterMs(200, '120', now), undefined);
  });

  it('caps the delay at an hour, takes a past date as 0, and ignores what it cannot read', () => {
    assert.equal(RETRY_AFTER_CAP_MS, 3_600_000);
    assert.equal(retryAfterMs(429, '86400', now), 3_600_000);
    assert.equal(retryAfterMs(429, 'Mon, 23 Nov 2026 09:00:00 GMT', now), 0);
    assert.deepEqual(
      ['soon', '', 'in 5 s'].map((header) => retryAfterMs(429, header, now)),
      [undefined, undefined, undefined],
    );
    assert.equal(retryAfterMs(429, undefined, now), undefined);
  });
});

describe('the kept response body', () => {
  it('cuts at a character boundary within the limit and drops NUL characters', () => {
    assert.equal(utf8Prefix(Buffer.from('aé'), 2), 'a');
    assert.equal(utf8Prefix(Buffer.from('aé'), 3), 'aé');
    assert.equal(utf8Prefix(Buffer.from('a\u0000b')), 'ab');
  });

  it('keeps invalid bytes as U+FFFD within the limit', () => {
    assert.equal(utf8Prefix(Buffer.from([0xff, 0xff, 0x41]), 6), '\ufffd\ufffd');
    assert.equal(utf8Prefix(Buffer.from([0xff, 0x41])), '\ufffdA');
  });

  it('reads at most the limit of a stream, gunzipped when the partner gzipped it', async () => {
    assert.equal(await readBodyPrefix(Readable.from([Buffer.from('abc'), Buffer.from('def')]), undefined, 4), 'abcd');
    const gzipped = zlib.gzipSync(Buffer.from('{"ok":true}'));
    assert.equal(await readBodyPrefix(Readable.from([gzipped]), ' GZIP '), '{"ok":true}');
    assert.equal(
      await readBodyPrefix(Readable.from([zlib.deflateSync(Buffer.from('deflated'))]), 'deflate'),
      'deflated',
    );
  });

  it('keeps what was read before the stream failed', async () => {
    const failing = new Readable({ read() {} });
    failing.push(Buffer.from('partial'));
    setImmediate(() => failing.destroy(new Error('reset')));
    assert.equal(await readBodyPrefix(failing, undefined), 'partial');
  });
});
