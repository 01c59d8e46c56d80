// The case-insensitive filters identity providers send must be served by an index on every supported
// PostgreSQL release (this suite runs on the embedded 18 and, in CI, on Debian's 15).
import assert from 'node:assert/strict';
import { raw, runSql, sql } from '../../db/sql';
import { compileFilter } from '../../api/scim/engine/filter/compile-sql';
import { parseFilter } from '../../api/scim/engine/filter/parser';
import type { ScimResource } from '../../api/scim/engine/resource-definition';
import { groupResource } from '../../api/scim/groups/resource';
import { userResource } from '../../api/scim/users/resource';
import { useTestDatabase } from '../support/database';

const GROUP = '00000000-0000-4000-a000-000000000001';

/** [resource, its table and alias, filter, an index every plan of it must show (all of them when several)]. */
const CASES: Array<[resource: ScimResource, from: string, filter: string, indexes: string[]]> = [
  [groupResource, 'scim_groups g', 'displayName eq "Engineering"', ['scim_groups_display_name_folded_idx']],
  [groupResource, 'scim_groups g', 'displayName sw "eng"', ['scim_groups_display_name_folded_idx']],
  [groupResource, 'scim_groups g', 'displayName co "neer"', ['scim_groups_display_name_trgm_idx']],
  [groupResource, 'scim_groups g', 'members[value eq "42"]', ['scim_group_members_value_folded_idx']],
  [groupResource, 'scim_groups g', 'members eq "42"', ['scim_group_members_value_folded_idx']],
  // The filters identity providers send on Users (migration 010).
  [userResource, 'users u', 'userName eq "Ada@Example.test"', ['users_scim_user_name_folded_idx']],
  [userResource, 'users u', 'userName sw "ada"', ['users_scim_user_name_folded_idx']],
  [userResource, 'users u', 'emails.value eq "ada@example.test"', ['users_scim_emails_folded_idx']],
  [userResource, 'users u', 'emails eq "ada@example.test"', ['users_scim_emails_folded_idx']],
  [userResource, 'users u', 'emails[value eq "ada@example.test"]', ['users_scim_emails_folded_idx']],
  [
    userResource,
    'users u',
    'emails[value eq "ada@example.test" and primary eq true]',
    ['users_scim_emails_folded_idx'],
  ],
  [
    userResource,
    'users u',
    `id eq "1" and groups.value eq "${GROUP}"`,
    ['users_pkey', 'scim_group_members_(user_uq|user_idx)'],
  ],
  [userResource, 'users u', `groups.value eq "${GROUP}"`, ['scim_group_members_(user_uq|group_idx)']],
];

describe('SCIM filters use the case-folding indexes', () => {
  const db = useTestDatabase();

  // A small directory with statistics (migration 011 analyzes the empty tables, which would make any index look free).
  before(async () => {
    await db.knex.raw(`
      INSERT INTO users (id, first_name, last_name, email_primary, emails)
      SELECT n, 'First' || n, 'Last' || n, 'user' || n || '@example.test', ARRAY['user' || n || '@example.test', 'alias' || n || '@example.test']
      FROM generate_series(1, 5000) AS n`);
    await db.knex.raw(`
      INSERT INTO scim_groups (id, display_name, created, last_modified, version)
      SELECT md5('group' || n)::uuid, 'Group ' || n, now(), now(), 1 FROM generate_series(1, 500) AS n`);
    await db.knex.raw(`
      INSERT INTO scim_group_members (group_id, member_user_id)
      SELECT md5('group' || n)::uuid, 1 + (n * 37 + k * 499) % 5000 FROM generate_series(1, 500) AS n, generate_series(0, 9) AS k`);
    await db.knex.raw('ANALYZE users, scim_groups, scim_group_members');
  });

  for (const [resource, from, filter, indexes] of CASES) {
    it(`${resource.name}: ${filter} → ${indexes.join(', ')}`, async () => {
      const where = compileFilter(resource, parseFilter(filter), 'http://127.0.0.1/scim/v2');
      const plan = await db.knex.transaction(async (trx) => {
        // The test tables are nearly empty; without this the planner would rightly prefer a scan.
        await trx.raw('SET LOCAL enable_seqscan = off');
        // runSql on a transaction runs on the transaction's own connection, where SET LOCAL holds.
        const rows = await runSql<{ 'QUERY PLAN': string }>(
          trx,
          sql`EXPLAIN SELECT 1 FROM ${raw(from)} WHERE ${where}`,
        );
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
      for (const index of indexes) assert.match(plan, new RegExp(index), plan);
    });
  }
});
