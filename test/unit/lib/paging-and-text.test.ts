// The pure helpers the internal API and the CLI share: keyset cursors and list fields, text PostgreSQL can
// store, JSON paths in errors, a PostgreSQL error's refused values, and the shape of a named token.
import assert from 'node:assert/strict';
import { z } from 'zod';
import { apiTokenId, issueApiToken } from '../../../lib/api-token';
import { bearerTokenChecker, presentedBearerToken } from '../../../lib/bearer-token';
import {
  databaseErrorMessage,
  databaseErrorsWithin,
  isDatabaseError,
  withoutRefusedValues,
} from '../../../lib/database-error';
import {
  decodeKeysetCursor,
  encodeKeysetCursor,
  exactText,
  isoDateTime,
  queryFlag,
  wholeCount,
} from '../../../lib/keyset-paging';
import {
  formatJsonPath,
  isCanonicalUuid,
  MAX_JSON_DEPTH,
  unstorableTextErrors,
  zodPathErrors,
} from '../../../lib/validation';

const issues = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : zodPathErrors(parsed.error).map((e) => e.message);
};

describe('keyset cursors', () => {
  const position = z.tuple([z.iso.datetime(), z.uuid()]);
  const row = ['2026-11-23T10:00:00.000Z', '0b9f3c2e-5a1d-4c8e-9f00-6d2b7a1e4c55'] as const;

  it('encode a position as base64url JSON and decode it back against its shape', () => {
    const cursor = encodeKeysetCursor(row);
    assert.equal(cursor, Buffer.from(JSON.stringify(row)).toString('base64url'));
    assert.match(cursor, /^[A-Za-z0-9_-]+$/);
    assert.deepEqual(decodeKeysetCursor(cursor, position), [...row]);
  });

  it('decode nothing from a cursor that is not one: not JSON, another shape, too short', () => {
    const cursors = [
      '%%%',
      Buffer.from('{').toString('base64url'),
      encodeKeysetCursor(['x', 'y']),
      encodeKeysetCursor([row[0]]),
    ];
    assert.deepEqual(
      cursors.map((cursor) => decodeKeysetCursor(cursor, position)),
      [undefined, undefined, undefined, undefined],
    );
  });
});

describe('list fields', () => {
  it('a date-time needs a time zone and becomes a Date', () => {
    assert.equal(isoDateTime.parse('2026-11-23T11:00:00+01:00').toISOString(), '2026-11-23T10:00:00.000Z');
    assert.deepEqual(issues(isoDateTime, '2026-11-23T10:00:00'), [
      'must be an ISO 8601 date-time with a time zone, such as 2026-11-23T10:00:00Z',
    ]);
  });

  it('exact text is not empty and holds no NUL or lone surrogate', () => {
    assert.equal(exactText.parse('c-77'), 'c-77');
    const unstorable = 'text PostgreSQL cannot store: a NUL character (\\u0000) or an unpaired surrogate';
    assert.deepEqual(
      [issues(exactText, ''), issues(exactText, 'a\0b'), issues(exactText, 'a\ud800')],
      [['must not be empty'], [unstorable], [unstorable]],
    );
  });

  it('a flag is true or false, false when absent', () => {
    assert.deepEqual(
      [queryFlag.parse('true'), queryFlag.parse('false'), queryFlag.parse(undefined)],
      [true, false, false],
    );
    assert.deepEqual(issues(queryFlag, 'yes'), ['must be true or false']);
  });

  it('a whole count goes from 1 to its maximum, from a string too', () => {
    const count = wholeCount(500);
    assert.deepEqual([count.parse('1'), count.parse(500)], [1, 500]);
    assert.deepEqual(
      [issues(count, '0'), issues(count, 501), issues(count, '2.5'), issues(count, 'ten')],
      [['must be at least 1'], ['must be at most 500'], ['must be a whole number'], ['must be a whole number']],
    );
  });
});

describe('JSON paths and text PostgreSQL can store', () => {
  it('writes paths as people do', () => {
    assert.deepEqual(
      [formatJsonPath(['users', 3, 'emails', 0]), formatJsonPath([]), formatJsonPath([2, 'a'])],
      ['users[3].emails[0]', '(root)', '[2].a'],
    );
  });

  it('names each unknown key of a strict object on its own', () => {
    const parsed = z.strictObject({ a: z.number() }).safeParse({ a: 'x', b: 1, c: 2 });
    assert.ok(!parsed.success);
    assert.deepEqual(zodPathErrors(parsed.error), [
      { path: 'a', message: 'Invalid input: expected number, received string' },
      { path: 'b', message: 'unknown field' },
      { path: 'c', message: 'unknown field' },
    ]);
  });

  it('finds NUL characters and lone surrogates in values and keys, and nesting past the limit', () => {
    const message = 'text PostgreSQL cannot store: a NUL character (\\u0000) or an unpaired surrogate';
    assert.deepEqual(unstorableTextErrors({ ok: 'é', list: ['x', 'a\0'], 'k\udc00': 1, n: 5 }), [
      { path: 'list[1]', message },
      { path: 'k\udc00', message },
    ]);
    let deep: unknown = 'x';
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) deep = [deep];
    assert.deepEqual(
      unstorableTextErrors(deep).map((e) => e.message),
      ['nested deeper than 64 levels'],
    );
  });

  it('takes only the canonical lower-case UUID form', () => {
    assert.deepEqual(
      [
        '0b9f3c2e-5a1d-4c8e-9f00-6d2b7a1e4c55',
        '0B9F3C2E-5A1D-4C8E-9F00-6D2B7A1E4C55',
        '0b9f3c2e5a1d4c8e9f006d2b7a1e4c55',
      ].map(isCanonicalUuid),
      [true, false, false],
    );
  });
});

describe("a PostgreSQL error's refused values", () => {
  const refused = Object.assign(new Error('invalid input syntax for type uuid: "jane@example.com"'), {
    code: '22P02',
    severity: 'ERROR',
  });
  const unique = Object.assign(new Error('duplicate key value violates unique constraint "apps_name_key"'), {
    code: '23505',
    severity: 'ERROR',
    detail: 'Key (name)=(jane) already exists.',
  });

  it('recognises an error PostgreSQL answered by its severity and five-character SQLSTATE', () => {
    assert.deepEqual(
      [
        refused,
        unique,
        new Error('x'),
        Object.assign(new Error('x'), { code: 'ECONNREFUSED', severity: 'ERROR' }),
        null,
      ].map(isDatabaseError),
      [true, true, false, false, false],
    );
  });

  it("replaces a data exception's quoted value, and leaves other messages as they are", () => {
    assert.equal(databaseErrorMessage(refused), 'invalid input syntax for type uuid: "[value]"');
    assert.equal(databaseErrorMessage(unique), 'duplicate key value violates unique constraint "apps_name_key"');
  });

  it('finds the errors in causes and aggregates, and removes their values from any text', () => {
    const outer = new AggregateError([new Error('other'), new Error('wrapper', { cause: refused })], 'all failed');
    assert.deepEqual(databaseErrorsWithin(outer), [refused]);
    assert.equal(
      withoutRefusedValues('at 1: "jane@example.com" and again "jane@example.com"', outer),
      'at 1: "[value]" and again "[value]"',
    );
  });
});

describe('bearer tokens and named API tokens', () => {
  it('reads the token of an Authorization header, any case, spaces around', () => {
    assert.deepEqual(['Bearer abc', 'bearer  abc ', 'Basic abc', 'Bearer', 'Bearer a b'].map(presentedBearerToken), [
      'abc',
      'abc',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('checks a presented token against the one configured', () => {
    const check = bearerTokenChecker('s3cret-token-0123456789');
    assert.deepEqual(
      ['Bearer s3cret-token-0123456789', 'Bearer s3cret-token-012345678', 'Token s3cret-token-0123456789'].map(check),
      ['valid', 'invalid', 'missing'],
    );
  });

  it('gives a named token its row id back, and nothing for another shape', () => {
    const issued = issueApiToken();
    assert.match(issued.secret, /^pis_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    assert.equal(apiTokenId(issued.secret), issued.id);
    assert.equal(apiTokenId(`pis_${'a'.repeat(32)}_${'b'.repeat(43)}`), 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa');
    assert.deepEqual(
      [`pis_${'A'.repeat(32)}_${'b'.repeat(43)}`, `pis_${'a'.repeat(32)}_${'b'.repeat(42)}`, 'internal-token'].map(
        apiTokenId,
      ),
      [undefined, undefined, undefined],
    );
  });
});
