import assert from 'node:assert/strict';
import { groupId, scimGet, startScimApi, type ScimApi } from './support';

const ALL = [1, 2, 3, 4, 5, 6, 7, 8];
const except = (...excluded: number[]) => ALL.filter((n) => !excluded.includes(n));

/** [filter, groups it matches in the known dataset of support.ts]; `BASE` stands for the SCIM base URL. */
const MATCHES: ReadonlyArray<readonly [string, readonly number[]]> = [
  // eq / ne, case-insensitive displayName, case-insensitive names and operators
  ['displayName eq "Engineering"', [1]],
  ['DISPLAYNAME EQ "engineering"', [1]],
  ['displayName Eq "SALES"', [3]],
  ['displayName ne "Engineering"', except(1)],
  ['displayName eq "Nobody"', []],
  ['displayName   eq   "Sales"', [3]],
  // co / sw / ew
  ['displayName co "engineer"', [1, 2]],
  ['displayName sw "ENG"', [1, 2]],
  ['displayName ew "managers"', [2]],
  ['displayName co ""', ALL],
  ['displayName sw "100"', [5, 8]],
  // LIKE metacharacters match literally
  ['displayName co "%"', [5]],
  ['displayName co "_"', [5]],
  ['displayName co "100%"', [5]],
  ['displayName co "\\\\"', [6]],
  ['displayName sw "back\\\\s"', [6]],
  ['externalId co "_"', [5]],
  // gt / ge / lt / le: code point order, case-insensitive for displayName
  ['displayName gt "Sales"', [4]],
  ['displayName ge "sales"', [3, 4]],
  ['displayName lt "b"', [5, 8]],
  ['displayName le "Back\\\\slash"', [5, 6, 8]],
  ['externalId gt "a"', [1, 4, 5, 7]],
  ['externalId lt "a"', [2]],
  // pr, and absent values (null, empty string, no members)
  ['displayName pr', ALL],
  ['externalId pr', [1, 2, 4, 5, 7]],
  ['externalId eq null', [3, 6, 8]],
  ['externalId ne null', [1, 2, 4, 5, 7]],
  ['members pr', except(5)],
  ['members eq null', [5]],
  ['meta pr', ALL],
  ['meta.lastModified pr', ALL],
  // caseExact attributes
  ['externalId eq "ENG-002"', [2]],
  ['externalId eq "eng-002"', []],
  ['externalId sw "eng"', [1]],
  ['externalId ne "ops"', [1, 2, 4, 5]],
  ['meta.resourceType eq "Group"', ALL],
  ['meta.resourceType eq "group"', []],
  ['meta.version eq "W/\\"3\\""', [2]],
  ['meta.version ne "W/\\"3\\""', except(2)],
  // not: a true complement, absent values included
  ['not (externalId eq "ops")', except(7)],
  ['not(externalId eq "ops")', except(7)],
  ['not (externalId pr)', [3, 6, 8]],
  ['not (members pr)', [5]],
  ['not (not (displayName eq "Sales"))', [3]],
  ['not (displayName eq "Sales") and not (displayName sw "e")', [4, 5, 6, 7, 8]],
  ['NOT (externalId sw "eng" or externalId eq "ops")', [2, 3, 4, 5, 6, 8]],
  // precedence: not, then and, then or
  ['displayName eq "Sales" or displayName eq "Engineering" and externalId eq "nope"', [3]],
  ['(displayName eq "Sales" or displayName eq "Engineering") and externalId eq "eng-001"', [1]],
  ['displayName eq "Engineering" and externalId eq "nope" or displayName eq "Sales"', [3]],
  ['displayName eq "Sales" and not (externalId pr) or members[type eq "Group"]', [2, 3, 7]],
  ['((((displayName eq "Sales"))))', [3]],
  // id: exact, non-UUIDs match nothing
  [`id eq "${groupId(3)}"`, [3]],
  [`id ne "${groupId(3)}"`, except(3)],
  ['id eq "not-a-uuid"', []],
  ['id ne "not-a-uuid"', ALL],
  [`id eq "${groupId(3).toUpperCase()}"`, []],
  ['id sw "00000000-0000-4000-a000-00000000000"', ALL],
  [`id gt "${groupId(6)}"`, [7, 8]],
  // members: the multi-valued shorthand, sub-attributes, value paths
  ['members eq "2"', [1, 2]],
  ['members.value eq "2"', [1, 2]],
  ['members[value eq "2"]', [1, 2]],
  ['members[VALUE EQ "1"]', [1, 7]],
  ['members[value eq "2" and type eq "User"]', [1, 2]],
  ['members[type eq "Group"]', [2, 7]],
  ['members.type eq "group"', [2, 7]],
  ['members[value eq "1" and type eq "Group"]', []],
  ['members.value eq "1" and members.type eq "Group"', [7]],
  ['members[value eq "3" or value eq "10"]', [3, 4, 6]],
  ['members[value eq "3"] or members[value eq "4"]', [3, 4, 8]],
  ['members.value ne "2"', except(5)],
  ['members[not (type eq "User")]', [2, 7]],
  ['not (members[type eq "User"])', [5]],
  [`members eq "${groupId(1)}"`, [2]],
  ['members[display eq "ada lovelace"]', [1, 7]],
  ['members.display co "ZOLA"', [3, 4]],
  ['members.display eq "Engineering"', [2]],
  ['members.display sw "ünal"', [4, 8]],
  ['members[display pr]', except(5)],
  ['members.$ref eq "BASE/Users/1"', [1, 7]],
  ['members[$ref sw "BASE/Groups/"]', [2, 7]],
  // URN-qualified names
  ['urn:ietf:params:scim:schemas:core:2.0:Group:displayName eq "Sales"', [3]],
  ['URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:GROUP:DISPLAYNAME eq "sales"', [3]],
  ['urn:ietf:params:scim:schemas:core:2.0:Group:members.value eq "10"', [6]],
  ['urn:ietf:params:scim:schemas:core:2.0:Group:members[value eq "10"]', [6]],
  // Unicode and JSON escapes
  ['displayName eq "ÉQUIPE CAFÉ"', [4]],
  ['displayName eq "\\u00e9quipe caf\\u00C9"', [4]],
  ['displayName eq "ops \\"quoted\\""', [7]],
  ['displayName co "\\u0022"', [7]],
  ['displayName eq "Back\\\\slash"', [6]],
  ['displayName eq "\\ud835\\udc9c"', []],
  ['externalId co "é"', [4]],
  ['externalId eq "FR-ÉQUIPE"', []],
  ['displayName co "\\t"', []],
  // dateTimes: chronological, with UTC offsets
  ['meta.lastModified gt "2024-03-04T00:00:00Z"', [4, 5, 6, 7, 8]],
  ['meta.lastModified gt "2024-03-04T11:00:00+02:00"', [4, 5, 6, 7, 8]],
  ['meta.lastModified gt "2024-03-04T11:00:00+00:00"', [5, 6, 7, 8]],
  ['meta.lastModified lt "2024-03-04T05:00:00-05:00"', [1, 2, 3]],
  ['meta.lastModified le "2024-03-04T05:00:00-05:00"', [1, 2, 3, 4]],
  ['meta.lastModified eq "2024-03-03T10:00:00.123456Z"', [3]],
  ['meta.lastModified eq "2024-03-03T12:00:00.123456+02:00"', [3]],
  ['meta.lastModified eq "2024-03-03T10:00:00Z"', []],
  ['meta.lastModified ne "2024-03-03T10:00:00.123456Z"', except(3)],
  ['meta.created ge "2024-01-07T00:00:00Z"', [7, 8]],
  ['meta.created le "2024-01-01T00:00:00Z"', [1]],
  ['meta.created ge "2024-01-08T00:00:00"', [8]],
  ['meta[lastModified gt "2024-03-07T00:00:00Z" and resourceType eq "Group"]', [7, 8]],
  ['meta.location eq "BASE/Groups/00000000-0000-4000-a000-000000000003"', [3]],
  ['meta.location sw "BASE/Groups/"', ALL],
];

/** [filter, pattern the 400 invalidFilter detail must match]. */
const INVALID: ReadonlyArray<readonly [string, RegExp]> = [
  ['displayName eq "Sales")', /^Unexpected '\)' at position 23: it closes nothing$/],
  ['(displayName eq "Sales"', /^Missing '\)' to close '\(' at position 1: found the end of the filter at position 24$/],
  ['members[value eq "1"', /^Missing '\]' to close '\[' at position 8/],
  ['displayName eq "Sales"]', /^Unexpected '\]' at position 23/],
  [
    'displayName xx "a"',
    /^Unknown operator 'xx' at position 13; expected one of eq, ne, co, sw, ew, gt, lt, ge, le, pr$/,
  ],
  ['displayName', /^Expected an operator after 'displayName' at position 12, found the end of the filter$/],
  ['displayName eq', /^Missing value after 'displayName eq' at position 13: found the end of the filter$/],
  [
    'displayName eq Sales',
    /^The value 'Sales' at position 16 must be a double-quoted string, a number, true, false or null$/,
  ],
  ['displayName eq "Sales" "x"', /^Unexpected '"x"' at position 24: expected 'and', 'or' or the end of the filter$/],
  ['displayName eq "Sales" displayName pr', /^Unexpected 'displayName' at position 24/],
  ['displayName eq "Sales', /^Unterminated string starting at position 16$/],
  ["displayName eq 'Sales'", /^Single quotes are not allowed at position 16; quote strings with double quotes$/],
  ['displayName eq "a" and', /^Expected an attribute name, '\(' or 'not' at position 23, found the end of the filter$/],
  ['displayName eq "a" or or displayName pr', /^Expected an attribute name, '\(' or 'not' at position 23, found 'or'$/],
  ['meta.created lt "2024-01-02"', /^"2024-01-02" at position 17 is not a valid dateTime/],
  ['not displayName pr', /^Expected '\(' after 'not' at position 1, found 'displayName'$/],
  ['displayName eq "a" & displayName pr', /^Unexpected character '&' at position 20$/],
  ['displayName eq "\\x"', /^Invalid escape \\x at position 17$/],
  ['displayName eq "\\u00G1"', /^Invalid \\u escape at position 17/],
  ['displayName eq "\\u0000"', /NUL character/],
  ['displayName eq "a\tb"', /^Control character U\+0009 at position 18 must be escaped/],
  ['displayName eq 1x', /^Malformed number at position 16$/],
  ['displayNam eq "x"', /^Unknown attribute 'displayNam' at position 1$/],
  ['displayName.value eq "x"', /^Unknown attribute 'displayName.value' at position 1$/],
  ['members.foo eq "x"', /^Unknown attribute 'members.foo' at position 1$/],
  ['members[foo eq "1"]', /^Unknown attribute 'foo' inside 'members\[\.\.\.\]' at position 9$/],
  ['members[members.value eq "1"]', /^Unknown attribute 'members.value' inside 'members\[\.\.\.\]'/],
  [
    'urn:ietf:params:scim:schemas:core:2.0:User:userName eq "x"',
    /^Unknown attribute 'urn:ietf:params:scim:schemas:core:2.0:User:userName' at position 1$/,
  ],
  ['schemas eq "x"', /^Unknown attribute 'schemas'/],
  ['a.b.c eq "x"', /^'a.b.c' at position 1 is not a valid attribute name$/],
  ['displayName gt true', /^Operator 'gt' cannot compare the boolean true at position 16$/],
  ['meta.created le false', /^Operator 'le' cannot compare the boolean false/],
  [
    'displayName eq true',
    /^'displayName' is a string attribute; the boolean true at position 16 cannot be compared with it/,
  ],
  ['displayName eq 12', /^'displayName' is a string attribute; the number 12 at position 16/],
  ['displayName gt null', /^Operator 'gt' cannot compare with null at position 16$/],
  ['meta.lastModified gt "2024-02-30T00:00:00Z"', /^"2024-02-30T00:00:00Z" at position 22 is not a valid dateTime/],
  ['meta.lastModified gt "yesterday"', /^"yesterday" at position 22 is not a valid dateTime/],
  ['meta.lastModified gt "2024-03-01T25:00:00Z"', /is not a valid dateTime/],
  ['meta.lastModified gt "2024-03-01T10:00:00+15:00"', /is not a valid dateTime/],
  ['meta.created co "2024"', /^Operator 'co' does not apply to the dateTime attribute 'meta.created'$/],
  ['meta eq "x"', /^'meta' is a complex attribute/],
  ['displayName[value eq "x"]', /^'displayName' at position 1 is not a complex attribute/],
  ['members[value[value eq "1"]]', /^Nested value filters are not allowed: '\[' at position 14$/],
  ['members[type eq "User"] [', /^Unexpected '\['/],
  ['', /^The filter is empty$/],
  ['   ', /^The filter is empty$/],
  [`displayName eq "${'x'.repeat(4100)}"`, /^The filter is longer than 4096 bytes$/],
  [
    `${'('.repeat(65)}displayName pr${')'.repeat(65)}`,
    /^The filter is nested more than 64 levels deep at position 65$/,
  ],
  [`${'not ('.repeat(65)}displayName pr${')'.repeat(65)}`, /^The filter is nested more than 64 levels deep/],
];

describe('SCIM filter: evaluated in PostgreSQL against the known dataset', () => {
  let scim: ScimApi;
  before(async () => {
    scim = await startScimApi();
  });
  after(async () => scim.close());

  const matching = async (filter: string) => {
    const reply = await scimGet(scim.base, '/Groups', [
      ['filter', filter.replaceAll('BASE', scim.base)],
      ['attributes', 'id'],
    ]);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const ids: string[] = reply.body.Resources.map((r: { id: string }) => r.id);
    assert.equal(reply.body.totalResults, ids.length);
    return ids;
  };

  for (const [filter, expected] of MATCHES) {
    it(`${filter.length > 90 ? `${filter.slice(0, 90)}...` : filter} matches ${JSON.stringify(expected)}`, async () => {
      assert.deepEqual(await matching(filter), expected.map(groupId));
    });
  }

  for (const [filter, detail] of INVALID) {
    const title =
      filter.length > 70 ? `${filter.slice(0, 70)}... (${filter.length} characters)` : JSON.stringify(filter);
    it(`${title} answers 400 invalidFilter`, async () => {
      const reply = await scimGet(scim.base, '/Groups', [['filter', filter]]);
      assert.equal(reply.status, 400);
      assert.equal(reply.headers.get('content-type'), 'application/scim+json; charset=utf-8');
      assert.deepEqual(Object.keys(reply.body), ['schemas', 'status', 'scimType', 'detail']);
      assert.deepEqual(reply.body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error']);
      assert.equal(reply.body.status, '400');
      assert.equal(reply.body.scimType, 'invalidFilter');
      assert.match(reply.body.detail, detail);
    });
  }

  it('accepts a filter nested exactly 64 levels deep', async () => {
    assert.deepEqual(await matching(`${'('.repeat(64)}displayName eq "Sales"${')'.repeat(64)}`), [groupId(3)]);
  });

  it('answers 400 invalidFilter when the filter parameter is repeated', async () => {
    const reply = await scimGet(scim.base, '/Groups', [
      ['filter', 'displayName pr'],
      ['filter', 'displayName pr'],
    ]);
    assert.equal(reply.status, 400);
    assert.deepEqual(reply.body, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '400',
      scimType: 'invalidFilter',
      detail: 'The filter parameter is given more than once',
    });
  });

  it('a filter that matches nothing answers 200 with totalResults 0', async () => {
    const reply = await scimGet(scim.base, '/Groups', [['filter', 'displayName eq "Nobody"']]);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 0,
      startIndex: 1,
      itemsPerPage: 0,
      Resources: [],
    });
  });
});
