import { importDirectory } from '../../directory/import-directory';
import { table } from '../harness/render';
import type { BenchmarkSuite } from '../harness/suite';

const USERS = 200_000;
const COMPANIES = 200;
const MEMBERSHIPS_PER_USER = 5;
const JOBS = 20_000;
const ROLES = ['admin', 'owner', 'manager', 'member'] as const;

/** A synthetic snapshot: 200k users, 1M company memberships, 20k jobs. */
function buildSnapshot() {
  const companies = Array.from({ length: COMPANIES }, (_, i) => ({
    id: `company-${i}`,
    internal_id: i + 1,
    name: `Company ${i}`,
  }));
  const users = Array.from({ length: USERS }, (_, i) => ({
    id: i + 1,
    first_name: `First${i}`,
    last_name: `Last${i}`,
    email_primary: `user${i}@example.test`,
    emails: [`user${i}@example.test`, `user${i}@home.test`],
    is_agency_user: i % 10 === 0,
  }));
  const company_users = users.flatMap((u) =>
    Array.from({ length: MEMBERSHIPS_PER_USER }, (_, k) => ({
      company_id: `company-${(u.id + k * 37) % COMPANIES}`,
      user_id: u.id,
      role: ROLES[(u.id + k) % ROLES.length],
    })),
  );
  const jobs = Array.from({ length: JOBS }, (_, i) => ({
    id: `job-${i}`,
    company_id: `company-${i % COMPANIES}`,
    title: `Job ${i}`,
  }));
  return { companies, users, company_users, jobs };
}

export const importSuite: BenchmarkSuite = {
  name: 'import',
  title: 'Directory import',
  async run({ knex, progress }) {
    const snapshot = buildSnapshot();
    const rows =
      snapshot.companies.length + snapshot.users.length + snapshot.company_users.length + snapshot.jobs.length;
    progress(`import: ${rows} rows, first import`);
    const first = await timed(() => importDirectory(knex, snapshot));
    progress(`import: re-import of the same snapshot`);
    const again = await timed(() => importDirectory(knex, snapshot));
    progress(`import: --replace with the same snapshot`);
    const replace = await timed(() => importDirectory(knex, snapshot, { replace: true }));
    const line = (name: string, ms: number) => [
      name,
      rows.toLocaleString('en'),
      `${(ms / 1000).toFixed(1)} s`,
      Math.round(rows / (ms / 1000)).toLocaleString('en'),
    ];
    return [
      `\`importDirectory\` (the code behind \`partner-service import\`) with ${USERS.toLocaleString('en')} users, ` +
        `${(USERS * MEMBERSHIPS_PER_USER).toLocaleString('en')} company memberships, ${JOBS.toLocaleString('en')} jobs and ${COMPANIES} companies, in one transaction each.`,
      '',
      table(
        ['run', '>rows', '>time', '>rows/s'],
        [
          line('first import (empty database)', first),
          line('same snapshot again (no changes)', again),
          line('same snapshot with --replace', replace),
        ],
      ),
    ].join('\n');
  },
};

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}
