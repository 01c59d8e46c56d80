import { benchAliasEmail, benchDisplayName, benchGroupId, benchMemberUser, benchUserName } from './seed';

export type BenchEndpoint = 'Groups' | 'Users';

/** The SCIM list queries the benchmark measures. */
export interface BenchQuery {
  readonly endpoint: BenchEndpoint;
  readonly name: string;
  readonly label: string;
  readonly query: Record<string, string>;
  readonly goalP50Ms?: number;
}

function groupQueries(): BenchQuery[] {
  const target = 42_317;
  const member = benchMemberUser(target, 3);
  const groups = (q: Omit<BenchQuery, 'endpoint'>): BenchQuery => ({ endpoint: 'Groups', ...q });
  return [
    groups({
      name: 'displayName-eq',
      label: 'displayName eq',
      query: { filter: `displayName eq "${benchDisplayName(target)}"` },
      goalP50Ms: 5,
    }),
    groups({ name: 'displayName-co', label: 'displayName co', query: { filter: 'displayName co "4231"' } }),
    groups({ name: 'members-value', label: 'members[value eq]', query: { filter: `members[value eq "${member}"]` } }),
    groups({
      name: 'membership-check',
      label: 'id eq and members eq',
      query: { filter: `id eq "${benchGroupId(target)}" and members eq "${member}"` },
      goalP50Ms: 10,
    }),
    groups({
      name: 'page-100',
      label: 'page of 100, excludedAttributes=members',
      query: { count: '100', excludedAttributes: 'members' },
    }),
  ];
}

/** The Users filters identity providers send, on the same directory; the user is a member of the target group. */
function userQueries(): BenchQuery[] {
  const group = 42_317;
  const user = benchMemberUser(group, 3);
  const users = (q: Omit<BenchQuery, 'endpoint'>): BenchQuery => ({ endpoint: 'Users', ...q });
  return [
    users({
      name: 'users-userName-eq',
      label: 'userName eq',
      query: { filter: `userName eq "${benchUserName(user)}"` },
      goalP50Ms: 5,
    }),
    // The second address, in other letter case: case-insensitive and not the userName.
    users({
      name: 'users-emails-value-eq',
      label: 'emails.value eq',
      query: { filter: `emails.value eq "${benchAliasEmail(user).toUpperCase()}"` },
      goalP50Ms: 5,
    }),
    users({
      name: 'users-membership-check',
      label: 'id eq and groups.value eq',
      query: { filter: `id eq "${user}" and groups.value eq "${benchGroupId(group)}"` },
      goalP50Ms: 10,
    }),
    users({
      name: 'users-page-100',
      label: 'page of 100, excludedAttributes=groups',
      query: { count: '100', excludedAttributes: 'groups' },
    }),
  ];
}

export function benchQueries(): BenchQuery[] {
  return [...groupQueries(), ...userQueries()];
}

export const apiPath = (q: Pick<BenchQuery, 'endpoint' | 'query'>): string =>
  `/scim/v2/${q.endpoint}?${new URLSearchParams(q.query)}`;
