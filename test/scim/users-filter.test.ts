import assert from 'node:assert/strict';
import { groupId, scimGet, startScimApi, type ScimApi } from './support';

const ALL = ['1', '2', '3', '4', '10'];
const G1 = groupId(1);

/** [filter, users it matches in the known dataset of support.ts]; `BASE` stands for the SCIM base URL. */
const MATCHES: ReadonlyArray<readonly [string, readonly string[]]> = [
  // userName: the primary address, case-insensitive in every script
  ['userName eq "ada@example.test"', ['1']],
  ['USERNAME eq "ADA@EXAMPLE.TEST"', ['1']],
  ['userName eq "émile@zola.test"', ['3']],
  ['urn:ietf:params:scim:schemas:core:2.0:User:userName eq "grace@example.test"', ['2']],
  ['userName eq "ada.lovelace@engine.test"', []],
  ['userName sw "A"', ['1', '10']],
  ['userName co "EXAMPLE"', ['1', '2', '4']],
  ['userName ew "@zola.test"', ['3']],
  ['userName pr', ALL],
  ['userName ne "ada@example.test"', ['2', '3', '4', '10']],
  // emails: every address, any one matching
  ['emails.value eq "ada@example.test"', ['1', '10']],
  ['emails eq "ADA@example.TEST"', ['1', '10']],
  ['emails[value eq "ada@example.test"]', ['1', '10']],
  ['emails.value eq "ada.lovelace@engine.test"', ['1']],
  ['emails.value eq "EMILE@EXAMPLE.TEST"', ['3']],
  ['emails.value co "100%"', ['3']],
  ['emails.value co "_"', ['3']],
  ['emails.value sw "emile"', ['3']],
  ['not (emails.value eq "ada@example.test")', ['2', '3', '4']],
  ['emails.value eq "ada@example.test" and emails.primary eq false', ['1', '10']],
  // value filters: conditions on the same address
  ['emails[value eq "ada@example.test" and primary eq true]', ['1']],
  ['emails[value eq "ada@example.test" and primary eq false]', ['10']],
  ['emails[primary eq false]', ['1', '3', '10']],
  ['emails[primary ne true]', ['1', '3', '10']],
  ['emails[primary eq true and value ew "example.test"]', ['1', '2', '4']],
  ['emails[value eq "nobody@x.test" or value eq "grace@example.test"]', ['2']],
  ['emails[value eq "grace@example.test" or primary eq false]', ['1', '2', '3', '10']],
  ['emails[not (primary eq true)]', ['1', '3', '10']],
  ['emails.primary eq true', ALL],
  ['emails.primary pr', ALL],
  ['emails.primary eq null', []],
  // groups: direct memberships; value is a group id, compared exactly
  [`id eq "1" and groups.value eq "${G1}"`, ['1']],
  [`id eq "4" and groups.value eq "${G1}"`, []],
  [`groups.value eq "${groupId(4)}"`, ['3', '4']],
  [`groups eq "${G1}"`, ['1', '2']],
  [`groups[value eq "${G1}"]`, ['1', '2']],
  [`groups.value eq "${G1.toUpperCase()}"`, []],
  ['groups.value eq "not-a-uuid"', []],
  [`groups.value ne "${G1}"`, ['1', '2', '3', '4', '10']],
  ['groups.display eq "sales"', ['3']],
  [`groups.$ref eq "BASE/Groups/${groupId(6)}"`, ['10']],
  ['groups pr', ALL],
  // name
  ['name.familyName eq "zola"', ['3']],
  ['name.givenName sw "a"', ['1', '10']],
  ['name.formatted co "ce hop"', ['2']],
  ['name[givenName eq "ünal"]', ['4']],
  // id and meta
  ['id eq "10"', ['10']],
  ['id eq "abc"', []],
  ['id eq "01"', []],
  ['id ne "1"', ['2', '3', '4', '10']],
  ['id eq "2" or userName eq "alan@bletchley.test"', ['2', '10']],
  ['meta.lastModified gt "2023-06-03T00:00:00Z"', ['3', '4', '10']],
  ['meta.lastModified eq "2023-06-03T00:00:00.123456Z"', ['3']],
  ['meta.created le "2023-01-02T00:00:00Z"', ['1', '2']],
  ['meta.resourceType eq "User"', ALL],
  ['meta.location eq "BASE/Users/2"', ['2']],
];

const INVALID: ReadonlyArray<readonly [string, RegExp]> = [
  [
    'emails.primary eq "true"',
    /^'emails\.primary' is a boolean attribute; the string "true" at position 19 cannot be compared with it/,
  ],
  ['emails[primary co true]', /^Operator 'co' does not apply to the boolean attribute 'emails\.primary'/],
  ['emails.primary gt false', /cannot compare the boolean false|does not apply to the boolean/],
  ['userName eq true', /^'userName' is a string attribute; the boolean true/],
  ['externalId eq "x"', /^Unknown attribute 'externalId' at position 1$/],
  ['emails[type eq "work"]', /^Unknown attribute 'type' inside 'emails\[\.\.\.\]' at position 8$/],
  ['urn:ietf:params:scim:schemas:core:2.0:Group:displayName eq "x"', /^Unknown attribute/],
  ['userName[value eq "x"]', /is not a complex attribute/],
  ['name eq "x"', /^'name' is a complex attribute/],
  ['groups.value eq 1', /is a string attribute; the number 1/],
  ['userName eq', /./],
  ['emails[value eq "x"', /./],
];

describe('SCIM Users filter: evaluated in PostgreSQL against the known dataset', () => {
  let scim: ScimApi;
  before(async () => {
    scim = await startScimApi();
  });
  after(async () => scim.close());

  const matching = async (filter: string) => {
    const reply = await scimGet(scim.base, '/Users', [
      ['filter', filter.replaceAll('BASE', scim.base)],
      ['attributes', 'id'],
    ]);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const ids: string[] = reply.body.Resources.map((r: { id: string }) => r.id);
    assert.equal(reply.body.totalResults, ids.length);
    return ids;
  };

  for (const [filter, expected] of MATCHES) {
    it(`${filter} matches ${JSON.stringify(expected)}`, async () => {
      assert.deepEqual(await matching(filter), expected);
    });
  }

  for (const [filter, detail] of INVALID) {
    it(`${JSON.stringify(filter)} answers 400 invalidFilter`, async () => {
      const reply = await scimGet(scim.base, '/Users', [['filter', filter]]);
      assert.equal(reply.status, 400);
      assert.deepEqual(Object.keys(reply.body), ['schemas', 'status', 'scimType', 'detail']);
      assert.equal(reply.body.status, '400');
      assert.equal(reply.body.scimType, 'invalidFilter');
      assert.match(reply.body.detail, detail);
    });
  }
});
