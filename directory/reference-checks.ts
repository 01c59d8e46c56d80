import { isCanonicalUuid } from '../lib/validation';
import type { DirectorySnapshot } from './snapshot-schema';

/** Ids that the snapshot refers to but does not itself contain; they must already be in the database. */
export interface ExternalReferences {
  companies: Map<string, string[]>;
  jobs: Map<string, string[]>;
  users: Map<number, string[]>;
  groups: Map<string, string[]>;
}

/** Finds duplicate ids within each section. Returns `path: message` lines. */
export function findDuplicates(snapshot: DirectorySnapshot): string[] {
  const problems: string[] = [];
  const check = <T>(section: string, rows: T[] | undefined, key: (row: T) => unknown, field: string) => {
    const seen = new Map<string, number>();
    rows?.forEach((row, index) => {
      if (!row) return; // an item invalid on its own (see validItemsOf)
      const value = key(row);
      if (value === undefined || value === null) return;
      const k = JSON.stringify(value);
      const first = seen.get(k);
      if (first === undefined) seen.set(k, index);
      else problems.push(`${section}[${index}].${field}: duplicate of ${section}[${first}]`);
    });
  };
  check('companies', snapshot.companies, (c) => c.id, 'id');
  check('companies', snapshot.companies, (c) => c.internal_id, 'internal_id');
  check('jobs', snapshot.jobs, (j) => j.id, 'id');
  check('jobs', snapshot.jobs, (j) => j.internal_id, 'internal_id');
  check('users', snapshot.users, (u) => u.id, 'id');
  check('company_users', snapshot.company_users, (m) => [m.company_id, m.user_id], 'user_id');
  check('job_users', snapshot.job_users, (m) => [m.job_id, m.user_id], 'user_id');
  check('groups', snapshot.groups, (g) => g.id, 'id');
  check('apps', snapshot.apps, (a) => a.app_id, 'app_id');
  snapshot.groups?.forEach((group, g) => {
    if (!group) return;
    const seen = new Set<string>();
    group.members?.forEach((member, m) => {
      const k = `${member.type}:${member.type === 'Group' ? member.value.toLowerCase() : member.value}`;
      if (seen.has(k)) problems.push(`groups[${g}].members[${m}]: duplicate member`);
      seen.add(k);
    });
  });
  return problems;
}

/**
 * Resolves every reference against the snapshot itself. References that the snapshot cannot satisfy are
 * returned (with the paths that use them) so the importer can look them up in the database, unless
 * `replace` is set, where the file is the whole truth and they are errors at once.
 */
export function collectReferences(
  snapshot: DirectorySnapshot,
  groupIds: string[],
  replace: boolean,
  problems: string[],
): ExternalReferences {
  const external: ExternalReferences = { companies: new Map(), jobs: new Map(), users: new Map(), groups: new Map() };
  const companies = new Set(snapshot.companies?.map((c) => c?.id));
  const jobs = new Set(snapshot.jobs?.map((j) => j?.id));
  const users = new Set(snapshot.users?.map((u) => u?.id));
  const groups = new Set(groupIds);

  const need = <K>(
    known: Set<K>,
    sectionPresent: boolean,
    map: Map<K, string[]>,
    id: K,
    path: string,
    noun: string,
  ) => {
    if (known.has(id)) return;
    if (replace && sectionPresent) {
      problems.push(`${path}: unknown ${noun} ${JSON.stringify(id)}`);
      return;
    }
    const paths = map.get(id) ?? [];
    paths.push(path);
    map.set(id, paths);
  };

  snapshot.jobs?.forEach(
    (job, i) =>
      job?.company_id !== undefined &&
      need(companies, !!snapshot.companies, external.companies, job.company_id, `jobs[${i}].company_id`, 'company'),
  );
  snapshot.company_users?.forEach((m, i) => {
    if (!m) return;
    need(
      companies,
      !!snapshot.companies,
      external.companies,
      m.company_id,
      `company_users[${i}].company_id`,
      'company',
    );
    need(users, !!snapshot.users, external.users, m.user_id, `company_users[${i}].user_id`, 'user');
  });
  snapshot.job_users?.forEach((m, i) => {
    if (!m) return;
    need(jobs, !!snapshot.jobs, external.jobs, m.job_id, `job_users[${i}].job_id`, 'job');
    need(users, !!snapshot.users, external.users, m.user_id, `job_users[${i}].user_id`, 'user');
  });
  snapshot.groups?.forEach((group, g) =>
    group?.members?.forEach((member, m) => {
      const path = `groups[${g}].members[${m}].value`;
      if (member.type === 'User') {
        if (!/^[1-9]\d{0,15}$/.test(member.value)) problems.push(`${path}: a User member's value must be a user id`);
        else need(users, !!snapshot.users, external.users, Number(member.value), path, 'user');
      } else if (!isCanonicalUuid(member.value.toLowerCase())) {
        problems.push(`${path}: a Group member's value must be a group id (UUID)`);
      } else if (member.value.toLowerCase() === groupIds[g]) {
        problems.push(`${path}: a group cannot be a member of itself`);
      } else {
        need(groups, true, external.groups, member.value.toLowerCase(), path, 'group');
      }
    }),
  );
  snapshot.apps?.forEach((app, a) =>
    app?.company_ids.forEach((companyId, c) =>
      need(companies, !!snapshot.companies, external.companies, companyId, `apps[${a}].company_ids[${c}]`, 'company'),
    ),
  );
  return external;
}
