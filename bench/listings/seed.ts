import type { Knex } from 'knex';
import { hashAppKey } from '../../lib/app-keys';

export const BENCH_USERS = 200_000;
/** The big company: every odd user id, so its ids have gaps. */
export const BIG_COMPANY = 'bench-co';
export const BIG_COMPANY_MEMBERS = 100_000;
export const SMALL_COMPANIES = 999;
export const JOBS = 20_000;
export const BIG_COMPANY_JOBS = 2_000;
export const USERS_PER_BIG_JOB = 20;
export const BENCH_APP = { appId: 'bench-app', key: 'bench-key-not-secret-0123456789' };

/** The directory of the issue (200k users, a 100k-member company, 20k jobs), written with set-based SQL. */
export async function seedListingDirectory(knex: Knex): Promise<void> {
  await knex.raw(`INSERT INTO companies (id, name) VALUES (?, 'Bench Co')`, [BIG_COMPANY]);
  await knex.raw(`INSERT INTO companies (id, name) SELECT 'co-' || g, 'Company ' || g FROM generate_series(1, ?) g`, [
    SMALL_COMPANIES,
  ]);
  await knex.raw(
    `INSERT INTO users (id, first_name, last_name, email_primary, emails, is_agency_user)
     SELECT g, 'First' || g, 'Last' || g, 'user' || g || '@example.test',
            CASE WHEN g % 3 = 0 THEN ARRAY['user' || g || '@example.test', 'alt' || g || '@example.org']
                 ELSE ARRAY['user' || g || '@example.test'] END,
            g % 10 = 0
     FROM generate_series(1, ?) g`,
    [BENCH_USERS],
  );
  await knex.raw(
    `INSERT INTO company_users (company_id, user_id, role)
     SELECT ?, g, CASE WHEN g % 1000 = 1 THEN 'admin' WHEN g % 1000 = 3 THEN 'owner' WHEN g % 10 = 5 THEN 'manager' ELSE 'member' END
     FROM generate_series(1, ?, 2) g`,
    [BIG_COMPANY, BENCH_USERS],
  );
  await knex.raw(
    `INSERT INTO company_users (company_id, user_id, role)
     SELECT 'co-' || (1 + (g / 2) % ?), g, CASE WHEN g % 100 = 0 THEN 'admin' ELSE 'member' END
     FROM generate_series(2, ?, 2) g`,
    [SMALL_COMPANIES, BENCH_USERS],
  );
  await knex.raw(
    `INSERT INTO jobs (id, company_id, title)
     SELECT 'job-' || g, CASE WHEN g <= ? THEN ? ELSE 'co-' || (1 + g % ?) END, 'Job ' || g
     FROM generate_series(1, ?) g`,
    [BIG_COMPANY_JOBS, BIG_COMPANY, SMALL_COMPANIES, JOBS],
  );
  // Each job of the big company: explicit roles for some of its members (distinct odd ids per job).
  await knex.raw(
    `INSERT INTO job_users (job_id, user_id, role)
     SELECT 'job-' || j, 2 * ((j * 37 + k * 4999) % ?) + 1,
            (ARRAY['job_owner', 'collaborator', 'viewer', 'job_interviewer'])[1 + k % 4]
     FROM generate_series(1, ?) j CROSS JOIN generate_series(1, ?) k`,
    [BIG_COMPANY_MEMBERS, BIG_COMPANY_JOBS, USERS_PER_BIG_JOB],
  );
  const { salt, hash } = hashAppKey(BENCH_APP.key);
  await knex('partner_apps').insert({ app_id: BENCH_APP.appId, name: 'Benchmark', key_salt: salt, key_hash: hash });
  await knex('partner_app_companies').insert({ app_id: BENCH_APP.appId, company_id: BIG_COMPANY });
  // Fresh statistics and visibility map, as autovacuum would have them on a live database.
  await knex.raw('VACUUM ANALYZE');
}
