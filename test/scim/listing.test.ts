import assert from 'node:assert/strict';
import { request } from 'undici';
import type { Knex } from '../../db/database';
import {
  groupId,
  idsOf,
  scimGet,
  seedDataset,
  startScimApi,
  ERROR_URN,
  LIST_URN,
  GROUP_URN,
  type ScimApi,
} from './support';

/** Records the SQL the API sends, to prove what it does not load. */
function recordQueries(knex: Knex): { sql: string[]; stop(): void } {
  const sql: string[] = [];
  const listener = (query: { sql: string }) => sql.push(query.sql);
  knex.on('query', listener);
  return { sql, stop: () => knex.off('query', listener) };
}

describe('SCIM Groups: resources, paging, sorting and projection', () => {
  let scim: ScimApi;
  before(async () => {
    scim = await startScimApi();
  });
  after(async () => scim.close());

  const list = (...query: Array<[string, string]>) => scimGet(scim.base, '/Groups', query);
  const fullGroup2 = () => ({
    schemas: [GROUP_URN],
    id: groupId(2),
    externalId: 'ENG-002',
    displayName: 'Engineering Managers',
    members: [
      { value: '2', display: 'Grace Hopper', type: 'User', $ref: `${scim.base}/Users/2` },
      { value: groupId(1), display: 'Engineering', type: 'Group', $ref: `${scim.base}/Groups/${groupId(1)}` },
    ],
    meta: {
      resourceType: 'Group',
      created: '2024-01-02T00:00:00.000000Z',
      lastModified: '2024-03-02T10:00:00.000000Z',
      location: `${scim.base}/Groups/${groupId(2)}`,
      version: 'W/"3"',
    },
  });

  describe('resources', () => {
    it('GET /Groups/{id} returns the whole group with absolute URLs and an ETag', async () => {
      const reply = await scimGet(scim.base, `/Groups/${groupId(2)}`);
      assert.equal(reply.status, 200);
      assert.equal(reply.headers.get('etag'), 'W/"3"');
      assert.equal(reply.headers.get('content-type'), 'application/scim+json; charset=utf-8');
      assert.deepEqual(reply.body, fullGroup2());
    });

    it('the list carries the same resource, and omits absent externalId and empty members', async () => {
      const reply = await list([
        'filter',
        'displayName eq "Engineering Managers" or displayName eq "100% Remote_Team"',
      ]);
      assert.deepEqual(reply.body, {
        schemas: [LIST_URN],
        totalResults: 2,
        startIndex: 1,
        itemsPerPage: 2,
        Resources: [
          fullGroup2(),
          {
            schemas: [GROUP_URN],
            id: groupId(5),
            externalId: 'pct_1',
            displayName: '100% Remote_Team',
            meta: {
              resourceType: 'Group',
              created: '2024-01-05T00:00:00.000000Z',
              lastModified: '2024-03-05T10:00:00.000000Z',
              location: `${scim.base}/Groups/${groupId(5)}`,
              version: 'W/"1"',
            },
          },
        ],
      });
      const sales = await scimGet(scim.base, `/Groups/${groupId(6)}`);
      assert.equal('externalId' in sales.body, false, 'an empty externalId is served as absent');
    });

    it('If-None-Match with the current version answers 304 without a body; an old version gets 200', async () => {
      // undici's request, because fetch adds Cache-Control: no-cache to conditional requests.
      const fresh = await request(`${scim.base}/Groups/${groupId(2)}`, { headers: { 'If-None-Match': 'W/"3"' } });
      assert.equal(fresh.statusCode, 304);
      assert.equal(fresh.headers.etag, 'W/"3"');
      assert.equal(await fresh.body.text(), '');
      const stale = await scimGet(scim.base, `/Groups/${groupId(2)}`, [], { headers: { 'If-None-Match': 'W/"2"' } });
      assert.equal(stale.status, 200);
    });

    for (const [label, id] of [
      ['an unknown UUID', '00000000-0000-4000-a000-999999999999'],
      ['a value that is not a UUID', 'not-a-uuid'],
      ['an upper-case spelling of an id (ids are case-exact)', groupId(2).toUpperCase()],
      ['a NUL byte', '%00'],
    ]) {
      it(`GET /Groups/{id} with ${label} answers 404 with the SCIM error body`, async () => {
        const reply = await scimGet(scim.base, `/Groups/${id}`);
        assert.equal(reply.status, 404);
        assert.deepEqual(Object.keys(reply.body), ['schemas', 'status', 'detail']);
        assert.deepEqual(reply.body.schemas, [ERROR_URN]);
        assert.equal(reply.body.status, '404');
        assert.match(reply.body.detail, /^Group ".*" not found$/);
      });
    }
  });

  describe('paging', () => {
    it('walks all groups in id order with startIndex and count', async () => {
      const pages = [];
      for (const startIndex of [1, 4, 7]) {
        const reply = await list(['startIndex', String(startIndex)], ['count', '3'], ['attributes', 'id']);
        assert.equal(reply.status, 200);
        pages.push(reply.body);
      }
      assert.deepEqual(
        pages.map((p) => [p.totalResults, p.startIndex, p.itemsPerPage]),
        [
          [8, 1, 3],
          [8, 4, 3],
          [8, 7, 2],
        ],
      );
      assert.deepEqual(pages.flatMap(idsOf), [1, 2, 3, 4, 5, 6, 7, 8].map(groupId));
    });

    it('pages sorted by displayName never skip or repeat a group', async () => {
      const seen: string[] = [];
      for (let startIndex = 1; startIndex <= 8; startIndex += 3) {
        const reply = await list(
          ['sortBy', 'displayName'],
          ['startIndex', String(startIndex)],
          ['count', '3'],
          ['attributes', 'id'],
        );
        seen.push(...idsOf(reply.body));
      }
      assert.deepEqual(seen, [8, 5, 6, 1, 2, 7, 3, 4].map(groupId));
    });

    it('a startIndex below 1 counts as 1', async () => {
      for (const startIndex of ['0', '-5']) {
        const reply = await list(['startIndex', startIndex], ['count', '2'], ['attributes', 'id']);
        assert.equal(reply.body.startIndex, 1);
        assert.deepEqual(idsOf(reply.body), [groupId(1), groupId(2)]);
      }
    });

    it('a startIndex past the end answers an empty page with the real total', async () => {
      const reply = await list(['startIndex', '100']);
      assert.deepEqual(reply.body, {
        schemas: [LIST_URN],
        totalResults: 8,
        startIndex: 100,
        itemsPerPage: 0,
        Resources: [],
      });
    });

    it('count=0 returns only the total, and a negative count counts as 0', async () => {
      for (const count of ['0', '-3']) {
        const reply = await list(['count', count], ['filter', 'members pr']);
        assert.deepEqual(reply.body, {
          schemas: [LIST_URN],
          totalResults: 7,
          startIndex: 1,
          itemsPerPage: 0,
          Resources: [],
        });
      }
    });

    for (const [name, value] of [
      ['startIndex', 'abc'],
      ['startIndex', '1.5'],
      ['count', ''],
      ['count', '1e3'],
      ['count', '0x10'],
    ]) {
      it(`${name}=${JSON.stringify(value)} answers 400 invalidValue`, async () => {
        const reply = await list([name, value]);
        assert.equal(reply.status, 400);
        assert.deepEqual(reply.body, {
          schemas: [ERROR_URN],
          status: '400',
          scimType: 'invalidValue',
          detail: `${name} must be an integer, not "${value}"`,
        });
      });
    }

    it('a repeated count answers 400 invalidValue', async () => {
      const reply = await list(['count', '1'], ['count', '2']);
      assert.equal(reply.status, 400);
      assert.equal(reply.body.scimType, 'invalidValue');
      assert.equal(reply.body.detail, 'The count parameter is given more than once');
    });
  });

  describe('sorting', () => {
    const sorted = async (...query: Array<[string, string]>) => {
      const reply = await list(...query, ['attributes', 'id']);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      return idsOf(reply.body);
    };

    it('defaults to id order, and sortOrder alone changes nothing', async () => {
      assert.deepEqual(await sorted(), [1, 2, 3, 4, 5, 6, 7, 8].map(groupId));
      assert.deepEqual(await sorted(['sortOrder', 'descending']), [1, 2, 3, 4, 5, 6, 7, 8].map(groupId));
    });

    it('sortBy=displayName orders case-insensitively by code point, both ways', async () => {
      assert.deepEqual(await sorted(['sortBy', 'displayName']), [8, 5, 6, 1, 2, 7, 3, 4].map(groupId));
      assert.deepEqual(
        await sorted(['sortBy', 'DisplayName'], ['sortOrder', 'ascending']),
        [8, 5, 6, 1, 2, 7, 3, 4].map(groupId),
      );
      assert.deepEqual(
        await sorted(['sortBy', 'displayName'], ['sortOrder', 'descending']),
        [4, 3, 7, 2, 1, 6, 5, 8].map(groupId),
      );
      assert.deepEqual(await sorted(['sortBy', `${GROUP_URN}:displayName`]), [8, 5, 6, 1, 2, 7, 3, 4].map(groupId));
    });

    it('sortBy=externalId is case-exact, missing values last ascending and first descending', async () => {
      assert.deepEqual(await sorted(['sortBy', 'externalId']), [2, 1, 4, 7, 5, 3, 6, 8].map(groupId));
      assert.deepEqual(
        await sorted(['sortBy', 'externalId'], ['sortOrder', 'descending']),
        [3, 6, 8, 5, 7, 4, 1, 2].map(groupId),
      );
    });

    it('sortBy=meta.created and meta.lastModified order chronologically', async () => {
      assert.deepEqual(await sorted(['sortBy', 'meta.created']), [1, 2, 3, 4, 5, 6, 7, 8].map(groupId));
      assert.deepEqual(
        await sorted(['sortBy', 'meta.lastModified'], ['sortOrder', 'descending']),
        [8, 7, 6, 5, 4, 3, 2, 1].map(groupId),
      );
    });

    it('sorts the filtered set before paging', async () => {
      assert.deepEqual(
        await sorted(['filter', 'members pr'], ['sortBy', 'displayName'], ['count', '2'], ['startIndex', '2']),
        [6, 1].map(groupId),
      );
    });

    for (const [query, detail] of [
      [
        ['sortBy', 'members'],
        'sortBy "members" is not sortable; use one of id, displayName, externalId, meta.created, meta.lastModified',
      ],
      [
        ['sortBy', 'nope'],
        'sortBy "nope" is not sortable; use one of id, displayName, externalId, meta.created, meta.lastModified',
      ],
      [['sortOrder', 'sideways'], 'sortOrder must be ascending or descending, not "sideways"'],
    ] as const) {
      it(`${query[0]}=${query[1]} answers 400 invalidValue`, async () => {
        const reply = await list([query[0], query[1]]);
        assert.equal(reply.status, 400);
        assert.deepEqual(reply.body, { schemas: [ERROR_URN], status: '400', scimType: 'invalidValue', detail });
      });
    }
  });

  describe('projection', () => {
    const group2 = async (...query: Array<[string, string]>) => {
      const reply = await scimGet(scim.base, `/Groups/${groupId(2)}`, query);
      assert.equal(reply.status, 200);
      const listed = await list(['filter', `id eq "${groupId(2)}"`], ...query);
      assert.deepEqual(listed.body.Resources, [reply.body], 'list and single GET project alike');
      return reply.body;
    };

    it('attributes=displayName returns id, schemas and displayName only', async () => {
      assert.deepEqual(await group2(['attributes', 'displayName']), {
        schemas: [GROUP_URN],
        id: groupId(2),
        displayName: 'Engineering Managers',
      });
    });

    it('attributes accepts sub-attributes, URN-qualified names and any letter case', async () => {
      assert.deepEqual(await group2(['attributes', `members.value,${GROUP_URN}:meta.lastModified, EXTERNALID`]), {
        schemas: [GROUP_URN],
        id: groupId(2),
        externalId: 'ENG-002',
        members: [{ value: '2' }, { value: groupId(1) }],
        meta: { lastModified: '2024-03-02T10:00:00.000000Z' },
      });
    });

    it('attributes naming only unknown attributes leaves id and schemas', async () => {
      assert.deepEqual(await group2(['attributes', 'nickName']), { schemas: [GROUP_URN], id: groupId(2) });
    });

    it('excludedAttributes removes attributes and sub-attributes, but never id or schemas', async () => {
      const { members, meta, ...rest } = fullGroup2();
      assert.deepEqual(await group2(['excludedAttributes', 'members,meta,id,schemas']), rest);
      assert.deepEqual(await group2(['excludedAttributes', 'members.$ref,meta.location,members.display']), {
        ...rest,
        members: members.map(({ value, type }) => ({ value, type })),
        meta: {
          resourceType: meta.resourceType,
          created: meta.created,
          lastModified: meta.lastModified,
          version: meta.version,
        },
      });
    });

    it('a page PostgreSQL renders has the very bytes of the serialised page, with and without members', async () => {
      const text = async (query: Record<string, string>) => {
        const response = await fetch(`${scim.base}/Groups?${new URLSearchParams({ count: '50', ...query })}`);
        assert.equal(response.status, 200);
        return response.text();
      };
      const recorder = recordQueries(scim.db.knex);
      let rendered: string[];
      try {
        rendered = [
          await text({}),
          await text({ excludedAttributes: 'members' }),
          await text({ filter: 'displayName co "e"', sortBy: 'displayName' }),
        ];
      } finally {
        recorder.stop();
      }
      assert.equal(
        recorder.sql.filter((q) => q.includes('json_strip_nulls')).length,
        3,
        'the three pages were rendered by PostgreSQL',
      );
      // Naming the attributes takes the serialising path, with the same content.
      const all = 'schemas,id,externalId,displayName,members,meta';
      const serialised = [
        await text({ attributes: all }),
        await text({ attributes: all.replace(',members', '') }),
        await text({ attributes: all, filter: 'displayName co "e"', sortBy: 'displayName' }),
      ];
      assert.deepEqual(rendered, serialised);
      assert.ok(
        JSON.parse(rendered[0]).Resources.some(
          (group: { members?: unknown[]; externalId?: string }) => group.members?.length && group.externalId,
        ),
      );
    });

    it('excludedAttributes=members does not read the members table at all', async () => {
      const recorder = recordQueries(scim.db.knex);
      try {
        const listed = await list(['excludedAttributes', 'members']);
        assert.equal(listed.body.Resources.length, 8);
        assert.ok(listed.body.Resources.every((r: object) => !('members' in r)));
        const single = await scimGet(scim.base, `/Groups/${groupId(2)}`, [['excludedAttributes', 'members']]);
        assert.equal('members' in single.body, false);
        const narrow = await list(['attributes', 'displayName']);
        assert.equal(narrow.body.Resources.length, 8);
      } finally {
        recorder.stop();
      }
      assert.ok(recorder.sql.length >= 3);
      assert.deepEqual(
        recorder.sql.filter((q) => q.includes('scim_group_members')),
        [],
      );
    });

    it('a page and its members come in one statement, not one per group', async () => {
      const recorder = recordQueries(scim.db.knex);
      try {
        const reply = await list();
        assert.equal(reply.body.Resources.length, 8);
      } finally {
        recorder.stop();
      }
      assert.equal(recorder.sql.length, 1, 'the short page proves the total, so no count query either');
      assert.match(recorder.sql[0], /scim_group_members/);
    });
  });
});

describe('SCIM Groups: count is capped at 1000', () => {
  let scim: ScimApi;
  before(async () => {
    scim = await startScimApi({}, async (knex) => {
      await seedDataset(knex);
      await knex.raw(`INSERT INTO scim_groups (id, display_name)
        SELECT ('10000000-0000-4000-a000-' || lpad(n::text, 12, '0'))::uuid, 'Bulk ' || n FROM generate_series(1, 1000) AS n`);
    });
  });
  after(async () => scim.close());

  it('count=5000 returns 1000 of the 1008 groups', async () => {
    const reply = await scimGet(scim.base, '/Groups', [
      ['count', '5000'],
      ['attributes', 'id'],
    ]);
    assert.equal(reply.body.totalResults, 1008);
    assert.equal(reply.body.itemsPerPage, 1000);
    assert.equal(reply.body.Resources.length, 1000);
  });

  it('count defaults to 100', async () => {
    const reply = await scimGet(scim.base, '/Groups', [['excludedAttributes', 'members']]);
    assert.equal(reply.body.totalResults, 1008);
    assert.equal(reply.body.itemsPerPage, 100);
  });
});
