// The SCIM filter's evaluation: what compileFilter makes of a parsed filter on the Groups and Users resources,
// as parameterised SQL (exact text and bindings), and the 400s for filters that parse but mean nothing there.
// Whether PostgreSQL plans these with their indexes is test/scim/index-use.test.ts's job.
import assert from 'node:assert/strict';
import { ScimError } from '../../../api/scim/engine/errors';
import { compileFilter, escapeLike } from '../../../api/scim/engine/filter/compile-sql';
import { parseFilter } from '../../../api/scim/engine/filter/parser';
import type { ScimResource } from '../../../api/scim/engine/resource-definition';
import { groupResource } from '../../../api/scim/groups/resource';
import { userResource } from '../../../api/scim/users/resource';

const BASE_URL = 'https://service.test/scim/v2';
const compiled = (resource: ScimResource, filter: string) => {
  const { sql, bindings } = compileFilter(resource, parseFilter(filter), BASE_URL);
  return { sql, bindings };
};
/** A case-insensitive comparison of `column` with a bound value, as compileFilter writes it. */
const folded = (column: string, operator: string) =>
  `(lower(${column} COLLATE pis_fold) COLLATE "C") ${operator} (lower(?::text COLLATE pis_fold) COLLATE "C")`;

describe('SCIM filters compiled to SQL', () => {
  it('compares a case-insensitive attribute folded on both sides, the value bound', () => {
    assert.deepEqual(compiled(groupResource, 'displayName eq "Eng"'), {
      sql: folded('g.display_name', '='),
      bindings: ['Eng'],
    });
  });

  it("makes co, sw and ew LIKE patterns, with the value's % _ and \\ escaped", () => {
    assert.deepEqual(compiled(groupResource, 'displayName co "50%_x"'), {
      sql: `${folded('g.display_name', 'LIKE')} ESCAPE '\\'`,
      bindings: ['%50\\%\\_x%'],
    });
    assert.deepEqual(compiled(userResource, 'userName sw "Ada" or name.familyName ew "x"').bindings, ['Ada%', '%x']);
    assert.equal(escapeLike('a\\b%c_d'), 'a\\\\b\\%c\\_d');
  });

  it('joins and/or in parentheses, and makes not a true complement (IS NOT TRUE)', () => {
    assert.deepEqual(
      compiled(userResource, 'userName sw "Ada" or name.familyName ew "x"').sql,
      `(${folded('u.email_primary', 'LIKE')} ESCAPE '\\' OR ${folded('u.last_name', 'LIKE')} ESCAPE '\\')`,
    );
    assert.deepEqual(compiled(groupResource, 'not (displayName pr)'), {
      sql: "(((g.display_name IS NOT NULL AND g.display_name <> '')) IS NOT TRUE)",
      bindings: [],
    });
  });

  it('reads eq null as absent and ne null as present', () => {
    assert.deepEqual(compiled(groupResource, 'displayName eq null'), compiled(groupResource, 'not (displayName pr)'));
    assert.deepEqual(compiled(groupResource, 'displayName ne null'), {
      sql: "(g.display_name IS NOT NULL AND g.display_name <> '')",
      bindings: [],
    });
  });

  it('matches no row for an id the key cannot hold, and every row for ne, without a SQL error', () => {
    assert.deepEqual(
      [compiled(groupResource, 'id eq "nope"'), compiled(groupResource, 'id ne "nope"')],
      [
        { sql: 'FALSE', bindings: [] },
        { sql: 'TRUE', bindings: [] },
      ],
    );
  });

  it('puts a condition on members in an EXISTS, the same for members[value eq] and members eq', () => {
    const exists = {
      sql: `EXISTS (SELECT 1 FROM scim_group_members m WHERE m.group_id = g.id AND ${folded('m.value', '=')})`,
      bindings: ['42'],
    };
    assert.deepEqual(compiled(groupResource, 'members[value eq "42"]'), exists);
    assert.deepEqual(compiled(groupResource, 'members eq "42"'), exists);
  });

  it('prefilters an e-mail with its indexable array containment before the EXISTS', () => {
    assert.deepEqual(compiled(userResource, 'emails[value eq "a@b" and primary eq true]'), {
      sql: `((pis_fold_array(u.emails) @> pis_fold_array(ARRAY[?::text])) AND EXISTS (SELECT 1 FROM unnest(u.emails) WITH ORDINALITY AS e(value, n) WHERE (${folded('e.value', '=')} AND (e.n = 1) = TRUE)))`,
      bindings: ['a@b', 'a@b'],
    });
  });

  it('orders a caseExact attribute by code point, and binds a dateTime as timestamptz with its offset', () => {
    assert.deepEqual(compiled(groupResource, 'externalId gt "m"'), {
      sql: `NULLIF(g.external_id, '') COLLATE "C" > ?`,
      bindings: ['m'],
    });
    assert.deepEqual(compiled(groupResource, 'meta.lastModified ge "2026-01-01 00:00:00+02:00"'), {
      sql: 'g.last_modified >= ?::timestamptz',
      bindings: ['2026-01-01T00:00:00+02:00'],
    });
  });
});

describe('SCIM filters that parse but mean nothing on the resource', () => {
  /** [resource, filter] → the detail of the 400 invalidFilter. */
  const meaningless: ReadonlyArray<{ resource: ScimResource; filter: string; detail: string }> = [
    { resource: groupResource, filter: 'nope eq "x"', detail: "Unknown attribute 'nope' at position 1" },
    {
      resource: groupResource,
      filter: 'members[nope eq "x"]',
      detail: "Unknown attribute 'nope' inside 'members[...]' at position 9",
    },
    {
      resource: groupResource,
      filter: 'displayName[value eq "x"]',
      detail: "'displayName' at position 1 is not a complex attribute; '[...]' applies to members and meta",
    },
    {
      resource: groupResource,
      filter: 'meta eq "x"',
      detail: "'meta' is a complex attribute; compare one of its sub-attributes, such as meta.lastModified",
    },
    {
      resource: groupResource,
      filter: 'displayName eq 5',
      detail:
        "'displayName' is a string attribute; the number 5 at position 16 cannot be compared with it, use a double-quoted string",
    },
    {
      resource: groupResource,
      filter: 'displayName gt true',
      detail: "Operator 'gt' cannot compare the boolean true at position 16",
    },
    {
      resource: groupResource,
      filter: 'displayName lt null',
      detail: "Operator 'lt' cannot compare with null at position 16",
    },
    {
      resource: groupResource,
      filter: 'meta.created co "2026"',
      detail: "Operator 'co' does not apply to the dateTime attribute 'meta.created'",
    },
    {
      resource: groupResource,
      filter: 'meta.created gt "yesterday"',
      detail:
        '"yesterday" at position 17 is not a valid dateTime; expected a form like 2024-05-01T12:00:00Z or 2024-05-01T14:00:00+02:00',
    },
    {
      resource: userResource,
      filter: 'emails.primary eq 1',
      detail:
        "'emails.primary' is a boolean attribute; the number 1 at position 19 cannot be compared with it, use true or false",
    },
    {
      resource: userResource,
      filter: 'emails.primary gt true',
      detail: "Operator 'gt' does not apply to the boolean attribute 'emails.primary'; use eq or ne",
    },
  ];
  for (const { resource, filter, detail } of meaningless) {
    it(`${resource.name}: ${filter}`, () => {
      assert.throws(
        () => compiled(resource, filter),
        (error: unknown) => {
          assert.ok(error instanceof ScimError);
          assert.deepEqual([error.status, error.scimType, error.detail], [400, 'invalidFilter', detail]);
          return true;
        },
      );
    });
  }
});
