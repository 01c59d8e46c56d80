// The SCIM filter's grammar without a server: the tokenizer, attribute paths, date-times, and every syntax error
// the parser answers with (its exact detail, its status and scimType).
import assert from 'node:assert/strict';
import { ScimError } from '../../../api/scim/engine/errors';
import { parseAttributePath } from '../../../api/scim/engine/filter/attribute-path';
import { normaliseDateTime } from '../../../api/scim/engine/filter/datetime';
import { MAX_FILTER_BYTES, MAX_FILTER_DEPTH, parseFilter } from '../../../api/scim/engine/filter/parser';
import { tokenize } from '../../../api/scim/engine/filter/tokenizer';

/** The detail of the invalidFilter 400 that `filter` is refused with. */
function refusal(filter: string): string {
  try {
    parseFilter(filter);
  } catch (error) {
    assert.ok(error instanceof ScimError);
    assert.deepEqual([error.status, error.scimType], [400, 'invalidFilter']);
    return error.detail;
  }
  assert.fail(`${filter} parsed`);
}

/** Each filter the tokenizer refuses, with the detail of its 400. */
const TOKEN_REFUSALS: Readonly<Record<string, string>> = {
  "a eq 'x'": 'Single quotes are not allowed at position 6; quote strings with double quotes',
  'a eq "x': 'Unterminated string starting at position 6',
  'a eq "\\q"': 'Invalid escape \\q at position 7',
  'a eq "\\u12G4"': 'Invalid \\u escape at position 7: expected four hexadecimal digits',
  'a eq "\\u0000"': 'The NUL character (\\u0000) at position 7 is not allowed',
  'a eq "x\ty"': 'Control character U+0009 at position 8 must be escaped inside a string',
  'a eq 1abc': 'Malformed number at position 6',
  'a eq 1.2.3': 'Malformed number at position 6',
  'a eq #': "Unexpected character '#' at position 6",
  'a eq \u0001': 'Unexpected character U+0001 at position 6',
};

/** Each filter the parser refuses, with the detail of its 400. */
const PARSE_REFUSALS: Readonly<Record<string, string>> = {
  '   ': 'The filter is empty',
  'not a pr': "Expected '(' after 'not' at position 1, found 'a'",
  'a pr and': "Expected an attribute name, '(' or 'not' at position 9, found the end of the filter",
  'or a pr': "Expected an attribute name, '(' or 'not' at position 1, found 'or'",
  a: "Expected an operator after 'a' at position 2, found the end of the filter",
  'a like "x"': "Unknown operator 'like' at position 3; expected one of eq, ne, co, sw, ew, gt, lt, ge, le, pr",
  'a eq': "Missing value after 'a eq' at position 3: found the end of the filter",
  'a eq x': "The value 'x' at position 6 must be a double-quoted string, a number, true, false or null",
  '(a pr': "Missing ')' to close '(' at position 1: found the end of the filter at position 6",
  'a pr)': "Unexpected ')' at position 5: it closes nothing",
  'a pr b pr': "Unexpected 'b' at position 6: expected 'and', 'or' or the end of the filter",
  'a[b[c pr]]': "Nested value filters are not allowed: '[' at position 4",
  'a[b pr': "Missing ']' to close '[' at position 2: found the end of the filter at position 7",
  'a.b.c pr': "'a.b.c' at position 1 is not a valid attribute name",
};

describe('SCIM filter tokenizer', () => {
  it('splits words, punctuation, strings and numbers with their 1-based positions, then an end token', () => {
    const tokens = tokenize('emails[type eq "work"] and x gt -2.5');
    assert.deepEqual(
      tokens.map((t) => [t.kind, t.text, t.position]),
      [
        ['word', 'emails', 1],
        ['lbracket', '[', 7],
        ['word', 'type', 8],
        ['word', 'eq', 13],
        ['string', '"work"', 16],
        ['rbracket', ']', 22],
        ['word', 'and', 24],
        ['word', 'x', 28],
        ['word', 'gt', 30],
        ['number', '-2.5', 33],
        ['end', '', 37],
      ],
    );
    assert.equal(tokens[4].value, 'work');
    assert.equal(tokens[9].value, -2.5);
  });

  it('decodes the JSON escapes of a string literal', () => {
    const [token] = tokenize(String.raw`"a\"b\\c\/d\b\f\n\r\t\u00e9"`);
    assert.equal(token.value, 'a"b\\c/d\b\f\n\r\té');
  });

  it('keeps URN prefixes, sub-attributes and $ in one word', () => {
    assert.deepEqual(
      tokenize('urn:x:y:User:name.given_$-1').map((t) => t.text),
      ['urn:x:y:User:name.given_$-1', ''],
    );
  });

  for (const [filter, detail] of Object.entries(TOKEN_REFUSALS)) {
    it(`refuses ${JSON.stringify(filter)}: ${detail}`, () => assert.equal(refusal(filter), detail));
  }
});

describe('SCIM filter parser: errors', () => {
  for (const [filter, detail] of Object.entries(PARSE_REFUSALS)) {
    it(`refuses ${JSON.stringify(filter)}: ${detail}`, () => assert.equal(refusal(filter), detail));
  }

  it(`refuses a filter over ${MAX_FILTER_BYTES} bytes, counted in UTF-8`, () => {
    const value = 'é'.repeat(2045);
    assert.equal(Buffer.byteLength(`a eq "${value}"`), MAX_FILTER_BYTES + 1);
    assert.equal(Buffer.byteLength(`a eq "${value.slice(1)}x"`), MAX_FILTER_BYTES);
    assert.equal(refusal(`a eq "${value}"`), 'The filter is longer than 4096 bytes');
    assert.equal(parseFilter(`a eq "${value.slice(1)}x"`).kind, 'compare');
  });

  it(`accepts ${MAX_FILTER_DEPTH} levels of parentheses and refuses one more, at its position`, () => {
    const nested = (depth: number) => `${'('.repeat(depth)}a pr${')'.repeat(depth)}`;
    assert.equal(parseFilter(nested(MAX_FILTER_DEPTH)).kind, 'present');
    assert.equal(refusal(nested(MAX_FILTER_DEPTH + 1)), 'The filter is nested more than 64 levels deep at position 65');
  });

  it('cuts a long unexpected token to 40 characters', () => {
    assert.equal(
      refusal(`a pr ${'b'.repeat(50)}`),
      `Unexpected '${'b'.repeat(40)}...' at position 6: expected 'and', 'or' or the end of the filter`,
    );
  });
});

describe('SCIM filter parser: literals and keywords', () => {
  it('reads true, false and null in any case, and numbers with exponents', () => {
    const values = ['a eq TRUE', 'a eq False', 'a ne NULL', 'a ge 1E2', 'a le -0.25'].map((filter) => {
      const node = parseFilter(filter);
      assert.equal(node.kind, 'compare');
      return node.kind === 'compare' && [node.operator, node.value.kind, node.value.value];
    });
    assert.deepEqual(values, [
      ['eq', 'boolean', true],
      ['eq', 'boolean', false],
      ['ne', 'null', null],
      ['ge', 'number', 100],
      ['le', 'number', -0.25],
    ]);
  });

  it('reads `pr` as presence, with no value, and `not` only before a parenthesis', () => {
    assert.deepEqual(parseFilter('title PR'), {
      kind: 'present',
      position: 1,
      path: { uri: undefined, attribute: 'title', subAttribute: undefined, text: 'title', position: 1 },
    });
    const not = parseFilter('not (title pr)');
    assert.equal(not.kind, 'not');
    assert.equal(not.kind === 'not' && not.operand.kind, 'present');
  });

  it('takes co, sw and ew with their operator lower-cased', () => {
    const ops = ['a CO "x"', 'a Sw "x"', 'a eW "x"'].map((filter) => {
      const node = parseFilter(filter);
      return node.kind === 'compare' ? node.operator : node.kind;
    });
    assert.deepEqual(ops, ['co', 'sw', 'ew']);
  });
});

describe('SCIM attribute paths', () => {
  it('splits a URN prefix at its last colon, and a sub-attribute at its dot', () => {
    assert.deepEqual(parseAttributePath('urn:ietf:params:scim:schemas:core:2.0:User:name.familyName', 7), {
      uri: 'urn:ietf:params:scim:schemas:core:2.0:User',
      attribute: 'name',
      subAttribute: 'familyName',
      text: 'urn:ietf:params:scim:schemas:core:2.0:User:name.familyName',
      position: 7,
    });
    assert.deepEqual(parseAttributePath('members.$ref'), {
      uri: undefined,
      attribute: 'members',
      subAttribute: '$ref',
      text: 'members.$ref',
      position: 1,
    });
  });

  it('refuses more than one dot, a name starting with a digit or a dash, and an empty part', () => {
    assert.deepEqual(
      ['a.b.c', '1a', '-a', 'a.', '.a', 'a.$b', 'urn:x:'].map((text) => parseAttributePath(text)),
      Array(7).fill(undefined),
    );
  });
});

describe('SCIM filter date-times (xsd:dateTime)', () => {
  it('keeps the instant: the offset kept, a missing offset read as UTC, a space for T, z upper-cased', () => {
    assert.deepEqual(
      [
        '2026-11-23T10:00:00Z',
        '2026-11-23 10:00:00',
        '2026-11-23t10:00:00.123456789+14:00',
        '2026-11-23T10:00:00z',
        '2026-11-23T10:00:00-05:30',
      ].map(normaliseDateTime),
      [
        '2026-11-23T10:00:00Z',
        '2026-11-23T10:00:00Z',
        '2026-11-23T10:00:00.123456789+14:00',
        '2026-11-23T10:00:00Z',
        '2026-11-23T10:00:00-05:30',
      ],
    );
  });

  it('takes 29 February in leap years only (2000 and 2024, not 1900 or 2026)', () => {
    assert.deepEqual(
      ['2000', '2024', '1900', '2026'].map((year) => normaliseDateTime(`${year}-02-29T00:00:00Z`) !== undefined),
      [true, true, false, false],
    );
  });

  it('refuses impossible dates, times and offsets', () => {
    const refused = [
      '0000-01-01T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T00:60:00Z',
      '2026-01-01T00:00:60Z',
      '2026-01-01T00:00:00+14:01',
      '2026-01-01T00:00:00+15:00',
      '2026-01-01T00:00:00+01:60',
      '2026-01-01',
      '2026-01-01T00:00:00.Z',
    ];
    assert.deepEqual(refused.map(normaliseDateTime), Array(refused.length).fill(undefined));
  });
});
