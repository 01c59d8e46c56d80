import assert from 'node:assert/strict';
import { describeError } from '../../lib/describe-error';

describe('describeError', () => {
  it('never answers with an empty reason or "undefined"', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(describeError(new AggregateError([refused, refused], '')), 'connect ECONNREFUSED 127.0.0.1:1');
    assert.equal(describeError(Object.assign(new Error(''), { code: 'EPIPE' })), 'Error (EPIPE)');
    assert.equal(describeError(undefined), 'undefined value thrown');
    assert.equal(describeError('plain'), 'plain');
  });
});
