import assert from 'node:assert/strict';
import fc from 'fast-check';
import { scimGet, startScimApi, type ScimApi } from './support';

/** Per resource type: valid filters to mutate, touching every part of the grammar, and attribute names. */
interface Target {
  readonly path: string;
  readonly seeds: readonly string[];
  readonly attributes: readonly string[];
  readonly complex: readonly string[];
}

const GROUPS: Target = {
  path: '/Groups',
  seeds: [
    'displayName eq "Engineering"',
    'members[value eq "1" and type eq "User"] or not (externalId pr)',
    'urn:ietf:params:scim:schemas:core:2.0:Group:displayName co "\\u00e9"',
    'meta.lastModified gt "2024-03-04T11:00:00+02:00" and (members.display sw "a" or id eq "x")',
    'not(displayName ew "%_\\\\") and meta[created le "2024-01-01T00:00:00Z"]',
  ],
  attributes: [
    'displayName',
    'externalId',
    'id',
    'members',
    'members.value',
    'members.display',
    'members.type',
    'members.$ref',
    'meta',
    'meta.created',
    'meta.lastModified',
    'meta.version',
    'meta.location',
    'meta.resourceType',
    'schemas',
    'bogus',
  ],
  complex: ['members', 'meta', 'displayName'],
};

const USERS: Target = {
  path: '/Users',
  seeds: [
    'userName eq "ada@example.test"',
    'emails[value eq "ada@example.test" and primary eq true] or not (groups pr)',
    'id eq "1" and groups.value eq "00000000-0000-4000-a000-000000000001"',
    'urn:ietf:params:scim:schemas:core:2.0:User:name.givenName co "\\u00e9" and emails.primary ne false',
    'not(emails.value ew "%_\\\\") and meta[lastModified le "2024-01-01T00:00:00Z"] or name[familyName sw "z"]',
  ],
  attributes: [
    'userName',
    'id',
    'externalId',
    'name',
    'name.givenName',
    'name.familyName',
    'name.formatted',
    'emails',
    'emails.value',
    'emails.primary',
    'groups',
    'groups.value',
    'groups.display',
    'groups.$ref',
    'meta.created',
    'meta.lastModified',
    'meta.version',
    'bogus',
  ],
  complex: ['emails', 'groups', 'name', 'meta', 'userName'],
};

/** Fragments that steer mutations towards the parser's edge cases. */
const FRAGMENTS = [
  '(',
  ')',
  '[',
  ']',
  '"',
  '\\',
  "'",
  ' ',
  '.',
  ':',
  'not',
  'and',
  'or',
  ' eq ',
  ' pr',
  ' gt ',
  'true',
  'null',
  '-1.5e3',
  'members',
  'emails',
  'primary',
  'groups.value',
  'meta.',
  'urn:',
  '\\u',
  '\\u0000',
  '\u0000',
  '\uD800',
  '%',
  '_',
  '😀',
  '\n',
  'displayName',
  '"2024-02-30T00:00:00Z"',
];

const mutation = fc.record({
  at: fc.nat(),
  remove: fc.nat({ max: 4 }),
  insert: fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 4, unit: 'binary' })),
});

const mutatedFilter = (target: Target) =>
  fc
    .tuple(fc.constantFrom(...target.seeds), fc.array(mutation, { minLength: 1, maxLength: 4 }))
    .map(([seed, mutations]) =>
      mutations.reduce((text, { at, remove, insert }) => {
        const i = at % (text.length + 1);
        return text.slice(0, i) + insert + text.slice(i + remove);
      }, seed),
    );

const randomFilter = fc.oneof(
  fc.string({ maxLength: 60, unit: 'binary' }),
  fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 12 }).map((parts) => parts.join('')),
);

const operator = fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le', 'EQ');
const literal = fc.oneof(
  fc.string({ maxLength: 12, unit: 'binary' }).map((s) => JSON.stringify(s)),
  fc.constantFrom(
    'true',
    'false',
    'null',
    '0',
    '-2.5',
    '"2024-01-01T00:00:00Z"',
    '"2024-01-01T00:00:00+14:00"',
    '"1999-12-31T23:59:59.999999999-12:00"',
  ),
);

/** Grammatically plausible filters with arbitrary attributes, operators and values. */
const generatedFilter = (target: Target): fc.Arbitrary<string> =>
  fc.letrec<{ filter: string }>((tie) => {
    const attributeName = fc.constantFrom(...target.attributes);
    return {
      filter: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.tuple(attributeName, operator, literal).map(([a, o, v]) => `${a} ${o} ${v}`),
        attributeName.map((a) => `${a} pr`),
        fc
          .tuple(tie('filter'), fc.constantFrom('and', 'or', 'AND'), tie('filter'))
          .map(([l, k, r]) => `${l} ${k} ${r}`),
        tie('filter').map((f) => `not (${f})`),
        tie('filter').map((f) => `(${f})`),
        fc.tuple(fc.constantFrom(...target.complex), tie('filter')).map(([a, f]) => `${a}[${f}]`),
      ),
    };
  }).filter;

const queryValue = fc.oneof(
  fc.string({ maxLength: 8, unit: 'binary' }),
  fc.integer().map(String),
  fc.constantFrom('', '-1', '0', '1e3', '99999999999999999999'),
);
const listQuery = fc.array(
  fc.tuple(
    fc.constantFrom('startIndex', 'count', 'sortBy', 'sortOrder', 'attributes', 'excludedAttributes', 'SORTBY'),
    queryValue,
  ),
  { maxLength: 4 },
);

for (const target of [GROUPS, USERS])
  describe(`SCIM filter on ${target.path}: property-based, random and mutated input never causes a 5xx`, function () {
    this.timeout(180_000);
    let scim: ScimApi;
    before(async () => {
      scim = await startScimApi();
    });
    after(async () => scim.close());

    /** Only 200 with a list, or 400 with the SCIM error body, is acceptable. */
    const assertWellFormed = async (query: Array<[string, string]>) => {
      const reply = await scimGet(scim.base, target.path, query);
      assert.ok(
        reply.status === 200 || reply.status === 400,
        `status ${reply.status} for ${JSON.stringify(query)}: ${JSON.stringify(reply.body)}`,
      );
      if (reply.status === 200) {
        assert.equal(reply.body.schemas[0], 'urn:ietf:params:scim:api:messages:2.0:ListResponse');
        assert.equal(Number.isInteger(reply.body.totalResults), true);
      } else {
        assert.equal(reply.body.status, '400');
        assert.ok(['invalidFilter', 'invalidValue'].includes(reply.body.scimType), JSON.stringify(reply.body));
        assert.equal(typeof reply.body.detail, 'string');
      }
      return reply.status;
    };

    it('mutated valid filters', async () => {
      await fc.assert(
        fc.asyncProperty(mutatedFilter(target), async (filter) => {
          await assertWellFormed([['filter', filter]]);
        }),
        { numRuns: 1000 },
      );
    });

    it('random strings and fragment soups', async () => {
      await fc.assert(
        fc.asyncProperty(randomFilter, async (filter) => {
          await assertWellFormed([['filter', filter]]);
        }),
        { numRuns: 1000 },
      );
    });

    it('generated filters over every attribute and operator, with paging, sorting and projection parameters', async () => {
      const statuses = new Set<number>();
      await fc.assert(
        fc.asyncProperty(generatedFilter(target), listQuery, async (filter, query) => {
          statuses.add(await assertWellFormed([['filter', filter], ...query]));
        }),
        { numRuns: 1000 },
      );
      assert.deepEqual([...statuses].sort(), [200, 400], 'the generator reaches both outcomes');
    });
  });
