import assert from 'node:assert/strict';
import { auditedFailure } from '../../../application/access/audit';

describe('auditedFailure', () => {
  it('keeps an error as its kind and message', () => {
    assert.equal(auditedFailure(new RangeError('max_per_second: too big')), 'RangeError: max_per_second: too big');
  });

  it('replaces what PostgreSQL cannot store (NUL, control characters, lone surrogates) and keeps pairs', () => {
    const quoted = new Error('Unrecognized key: "a\u0000b\u0017c\ud9a0\udf62d\ud800e\udc00"');
    assert.equal(auditedFailure(quoted), 'Error: Unrecognized key: "a\ufffdb\ufffdc\ud9a0\udf62d\ufffde\ufffd"');
  });

  it('cuts a long message to 500 characters', () => {
    assert.equal(auditedFailure(new Error('x'.repeat(1000))).length, 500);
  });
});
