import type { Knex } from '../../db/database';
import { startTestApi, type TestApi } from '../support/api';

export interface ScimApi extends TestApi {
  /** SCIM base URL as the server sees it, e.g. http://127.0.0.1:1234/scim/v2 */
  readonly base: string;
}

/** A fresh database seeded with `seed`, and the real API on a free loopback port configured from `env`. */
export async function startScimApi(
  env: NodeJS.ProcessEnv = {},
  seed: (knex: Knex) => Promise<void> = seedDataset,
): Promise<ScimApi> {
  const testApi = await startTestApi(env, seed);
  return { ...testApi, base: `${testApi.api.url}/scim/v2` };
}

export interface ScimReply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
}

/** GET (or `method`) on a SCIM path with query parameters given as pairs, so a name may repeat. */
export async function scimGet(
  base: string,
  path: string,
  query: ReadonlyArray<readonly [string, string]> = [],
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<ScimReply> {
  const url = new URL(`${base}${path}`);
  for (const [name, value] of query) url.searchParams.append(name, value);
  const res = await fetch(url, { method: init.method ?? 'GET', headers: init.headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** The schema URNs a SCIM answer names (RFC 7643, RFC 7644), as the tests expect them to the letter. */
export const USER_URN = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_URN = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_URN = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_URN = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** The ids of a SCIM list answer's resources, in the order it lists them. */
export const idsOf = (body: { Resources: Array<{ id: string }> }): string[] =>
  body.Resources.map((resource) => resource.id);

/** Group ids of the known dataset: group n has id groupId(n). */
export const groupId = (n: number) => `00000000-0000-4000-a000-${String(n).padStart(12, '0')}`;

/** Users of the known dataset; `emails` primary first, as the directory keeps them. */
export const USERS = [
  {
    id: 1,
    first_name: 'Ada',
    last_name: 'Lovelace',
    emails: ['Ada@Example.test', 'ada.lovelace@engine.test'],
    created_at: '2023-01-01T00:00:00Z',
    updated_at: '2023-06-01T00:00:00Z',
  },
  {
    id: 2,
    first_name: 'Grace',
    last_name: 'Hopper',
    emails: ['grace@example.test'],
    created_at: '2023-01-02T00:00:00Z',
    updated_at: '2023-06-02T00:00:00Z',
  },
  {
    id: 3,
    first_name: 'Émile',
    last_name: 'Zola',
    emails: ['ÉMILE@zola.test', 'emile@example.test', 'ecrivain_100%@zola.test'],
    created_at: '2023-01-03T00:00:00Z',
    updated_at: '2023-06-03T00:00:00.123456Z',
  },
  {
    id: 4,
    first_name: 'Ünal',
    last_name: 'Öz',
    emails: ['unal@example.test'],
    created_at: '2023-01-04T00:00:00Z',
    updated_at: '2023-06-04T00:00:00Z',
  },
  {
    id: 10,
    first_name: 'Alan',
    last_name: 'Turing',
    emails: ['alan@bletchley.test', 'ADA@example.test'],
    created_at: '2023-01-10T00:00:00Z',
    updated_at: '2023-06-10T00:00:00Z',
  },
];

interface GroupSeed {
  readonly n: number;
  readonly displayName: string;
  readonly externalId: string | null;
  readonly created: string;
  readonly lastModified: string;
  readonly version?: number;
  readonly users: readonly number[];
  readonly groups: readonly number[];
}

/** The known dataset every filter test runs against; see docs/scim.md for the semantics it pins. */
export const GROUPS: readonly GroupSeed[] = [
  {
    n: 1,
    displayName: 'Engineering',
    externalId: 'eng-001',
    created: '2024-01-01T00:00:00Z',
    lastModified: '2024-03-01T10:00:00Z',
    users: [1, 2],
    groups: [],
  },
  {
    n: 2,
    displayName: 'Engineering Managers',
    externalId: 'ENG-002',
    created: '2024-01-02T00:00:00Z',
    lastModified: '2024-03-02T10:00:00Z',
    version: 3,
    users: [2],
    groups: [1],
  },
  {
    n: 3,
    displayName: 'Sales',
    externalId: null,
    created: '2024-01-03T00:00:00Z',
    lastModified: '2024-03-03T10:00:00.123456Z',
    users: [3],
    groups: [],
  },
  {
    n: 4,
    displayName: 'Équipe Café',
    externalId: 'fr-équipe',
    created: '2024-01-04T00:00:00Z',
    lastModified: '2024-03-04T10:00:00Z',
    users: [3, 4],
    groups: [],
  },
  {
    n: 5,
    displayName: '100% Remote_Team',
    externalId: 'pct_1',
    created: '2024-01-05T00:00:00Z',
    lastModified: '2024-03-05T10:00:00Z',
    users: [],
    groups: [],
  },
  {
    n: 6,
    displayName: 'Back\\slash',
    externalId: '',
    created: '2024-01-06T00:00:00Z',
    lastModified: '2024-03-06T10:00:00Z',
    users: [10],
    groups: [],
  },
  {
    n: 7,
    displayName: 'ops "quoted"',
    externalId: 'ops',
    created: '2024-01-07T00:00:00Z',
    lastModified: '2024-03-07T10:00:00Z',
    users: [1],
    groups: [3],
  },
  {
    n: 8,
    displayName: '100 Remote Team',
    externalId: null,
    created: '2024-01-08T00:00:00Z',
    lastModified: '2024-03-08T10:00:00Z',
    users: [4],
    groups: [],
  },
];

export async function seedDataset(knex: Knex): Promise<void> {
  await knex('users').insert(USERS.map((u) => ({ ...u, email_primary: u.emails[0] })));
  await knex('scim_groups').insert(
    GROUPS.map((g) => ({
      id: groupId(g.n),
      display_name: g.displayName,
      external_id: g.externalId,
      created: g.created,
      last_modified: g.lastModified,
      version: g.version ?? 1,
    })),
  );
  const members = GROUPS.flatMap((g) => [
    ...g.users.map((user) => ({ group_id: groupId(g.n), member_user_id: user })),
    ...g.groups.map((group) => ({ group_id: groupId(g.n), member_group_id: groupId(group) })),
  ]);
  await knex('scim_group_members').insert(members);
}
