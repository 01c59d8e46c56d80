import { createHash } from 'node:crypto';
import type { Knex } from '../../db/database';

/** Size of the SCIM benchmark directory. */
export const SCIM_BENCH_USERS = 50_000;
export const SCIM_BENCH_GROUPS = 100_000;
export const DEPARTMENTS = [
  'Engineering',
  'Sales',
  'Marketing',
  'Support',
  'Finance',
  'Operations',
  'Legal',
  'Research',
];

/** The id, displayName and user members of group n (1-based), as the seed SQL computes them. */
export const benchGroupId = (n: number) => md5Uuid(`group${n}`);
export const benchDisplayName = (n: number) =>
  `Group ${String(n).padStart(6, '0')} ${DEPARTMENTS[n % DEPARTMENTS.length]}`;
/** User member k (0-based) of group n: distinct for k < 10 because 4729 * k < 50000. */
export const benchMemberUser = (n: number, k: number) => 1 + ((n * 7919 + k * 104_729) % SCIM_BENCH_USERS);
/** User n's primary address (its SCIM userName) and its second address, as the seed SQL writes them. */
export const benchUserName = (n: number) => `user${n}@example.test`;
export const benchAliasEmail = (n: number) => `First${n}.Last${n}@Alias.Example.test`;

function md5Uuid(text: string): string {
  const hex = createHash('md5').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * 50k users (two addresses each), 100k groups and 1M memberships, set-based: every group has 10 members, odd groups 10 users,
 * even groups 9 users and the next group. Ends with VACUUM ANALYZE so plans see real statistics.
 */
export async function seedScimDirectory(knex: Knex): Promise<void> {
  await knex.raw(`
    INSERT INTO users (id, first_name, last_name, email_primary, emails)
    SELECT n, 'First' || n, 'Last' || n, 'user' || n || '@example.test',
           ARRAY['user' || n || '@example.test', 'First' || n || '.Last' || n || '@Alias.Example.test']
    FROM generate_series(1, ${SCIM_BENCH_USERS}) AS n`);
  await knex.raw(`
    INSERT INTO scim_groups (id, external_id, display_name, created, last_modified, version)
    SELECT md5('group' || n)::uuid,
           CASE WHEN n % 10 = 0 THEN NULL ELSE 'ext-' || n END,
           'Group ' || lpad(n::text, 6, '0') || ' ' || (ARRAY[${DEPARTMENTS.map((d) => `'${d}'`).join(', ')}])[1 + n % ${DEPARTMENTS.length}],
           timestamptz '2024-01-01 00:00:00Z' + n * interval '1 minute',
           timestamptz '2024-06-01 00:00:00Z' + ((n * 7919) % ${SCIM_BENCH_GROUPS}) * interval '1 minute',
           1 + n % 5
    FROM generate_series(1, ${SCIM_BENCH_GROUPS}) AS n`);
  await knex.raw(`
    INSERT INTO scim_group_members (group_id, member_user_id)
    SELECT md5('group' || n)::uuid, 1 + ((n * 7919 + k * 104729) % ${SCIM_BENCH_USERS})
    FROM generate_series(1, ${SCIM_BENCH_GROUPS}) AS n, generate_series(0, 9) AS k
    WHERE k < 9 OR n % 2 = 1`);
  await knex.raw(`
    INSERT INTO scim_group_members (group_id, member_group_id)
    SELECT md5('group' || n)::uuid, md5('group' || (n % ${SCIM_BENCH_GROUPS} + 1))::uuid
    FROM generate_series(2, ${SCIM_BENCH_GROUPS}, 2) AS n`);
  await knex.raw('VACUUM ANALYZE users, scim_groups, scim_group_members');
  // Flush the load's dirty pages now, so the checkpointer does not compete with the first measurements.
  await knex.raw('CHECKPOINT').catch(() => undefined); // needs superuser or pg_checkpoint; optional
}
