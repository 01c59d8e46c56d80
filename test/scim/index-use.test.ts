// The case-insensitive filters identity providers send must be served by an index on every supported
// PostgreSQL release (this suite runs on the embedded 18 and, in CI, on Debian's 15).
import assert from 'node:assert/strict';
import { compileFilter } from '../../api/scim/engine/filter/compile-sql';
import { parseFilter } from '../../api/scim/engine/filter/parser';
import { groupResource } from '../../api/scim/groups/resource';
import { useTestDatabase } from '../support/database';

const CASES: Array<[filter: string, index: string]> = [
  ['displayName eq "Engineering"', 'scim_groups_display_name_folded_idx'],
  ['displayName sw "eng"', 'scim_groups_display_name_folded_idx'],
  ['displayName co "neer"', 'scim_groups_display_name_trgm_idx'],
  ['members[value eq "42"]', 'scim_group_members_value_folded_idx'],
  ['members eq "42"', 'scim_group_members_value_folded_idx'],
];

describe('SCIM filters use the case-folding indexes', () => {
  const db = useTestDatabase();

  for (const [filter, index] of CASES) {
    it(`${filter} → ${index}`, async () => {
      const where = compileFilter(groupResource, parseFilter(filter), 'http://127.0.0.1/scim/v2');
      const plan = await db.knex.transaction(async (trx) => {
        // The test tables are nearly empty; without this the planner would rightly prefer a scan.
        await trx.raw('SET LOCAL enable_seqscan = off');
        const { rows } = await trx.raw(`EXPLAIN SELECT g.id FROM scim_groups g WHERE ${where.sql}`, [...where.bindings]);
        return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      });
      assert.match(plan, new RegExp(index), plan);
    });
  }
});
