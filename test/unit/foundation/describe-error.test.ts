import assert from 'node:assert/strict';
import { describeError, describeJsonSyntaxError } from '../../../lib/describe-error';

describe('describeError', () => {
  it('never answers with an empty reason or "undefined"', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(describeError(new AggregateError([refused, refused], '')), 'connect ECONNREFUSED 127.0.0.1:1');
    assert.equal(describeError(Object.assign(new Error(''), { code: 'EPIPE' })), 'Error (EPIPE)');
    assert.equal(describeError(undefined), 'undefined value thrown');
    assert.equal(describeError('plain'), 'plain');
  });

  it("describes a JSON syntax error without V8's copy of the input, which may be personal data", () => {
    const reason = (text: string) => {
      try {
        JSON.parse(text);
      } catch (error) {
        return describeJsonSyntaxError(error);
      }
      return 'parsed';
    };
    assert.equal(reason('{"email": "bo@example.org", "phone": +44 7700 900123}'), "Unexpected token '+'");
    assert.equal(reason('bo@example.org'), "Unexpected token 'b'");
    assert.equal(
      reason('{"email": "bo@example.org"'),
      "Expected ',' or '}' after property value in JSON at position 26",
    );
  });
});
