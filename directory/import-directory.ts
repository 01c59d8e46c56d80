import { readFile } from 'node:fs/promises';
import type { Knex } from 'knex';
import { v5 as uuidv5 } from 'uuid';
import { hashAppKey, verifyAppKey } from '../lib/app-keys';
import { describeJsonSyntaxError } from '../lib/describe-error';
import { formatPathError, unstorableTextErrors, zodPathErrors } from '../lib/validation';
import { collectReferences, findDuplicates, type ExternalReferences } from './reference-checks';
import { directorySnapshotSchema, validItemsOf, type DirectorySnapshot, type SnapshotSection } from './snapshot-schema';
import { auditedChange, recordFailedAndThrow, type OperatorContext } from '../application/access/audit';
import { DirectoryImportError } from '../lib/errors';

export interface ImportOptions {
  /** Delete rows of each section present in the snapshot that the snapshot does not list. */
  replace?: boolean;
  /** The operator importing: the import and its audit row commit together (absent for start's demo import). */
  who?: OperatorContext;
}

/** Per section: rows new to the database, rows changed, rows already as the file says, rows --replace removed. */
export interface SectionSummary {
  inserted: number;
  updated: number;
  unchanged: number;
  deleted: number;
}

export type ImportSummary = Record<string, SectionSummary> & { durationMs?: number };

/**
 * Namespace of the deterministic ids given to groups imported without an id (UUID v5 of external_id or displayName).
 */
const GROUP_ID_NAMESPACE = '2a6f1d0e-3b7c-4f55-9c1e-6d2b8a4e7f90';
// One jsonb parameter per chunk keeps statements parameterised and the round trips few.
const CHUNK = 5000;

export async function importDirectoryFile(
  knex: Knex,
  file: string,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new DirectoryImportError([`(file): ${describeJsonSyntaxError(error)}`]);
  }
  return importDirectory(knex, json, options);
}

/** Validates the whole snapshot, then upserts it in one transaction. Invalid input writes nothing. */
export async function importDirectory(
  knex: Knex,
  input: unknown,
  { replace = false, who }: ImportOptions = {},
): Promise<ImportSummary> {
  const started = Date.now();
  // Every kind of check runs, so one pass reports schema, text, duplicate and reference problems together.
  const parsed = directorySnapshotSchema.safeParse(input);
  const problems = parsed.success ? [] : zodPathErrors(parsed.error).map(formatPathError);
  const snapshot = parsed.success ? parsed.data : validItemsOf(input);
  problems.push(...unstorableTextErrors(snapshot).map(formatPathError));
  const groupIds = (snapshot.groups ?? []).map(
    (g) => g && (g.id ?? uuidv5(g.external_id ?? g.display_name, GROUP_ID_NAMESPACE)).toLowerCase(),
  );

  problems.push(...findDuplicates(snapshot));
  if (snapshot.groups && !snapshot.groups.every((g) => !g || g.id)) {
    const seen = new Map<string, number>();
    groupIds.forEach((id, i) => {
      const first = seen.get(id);
      if (first !== undefined && snapshot.groups![i].id === undefined)
        problems.push(`groups[${i}].id: generated id collides with groups[${first}]; give one of them an id`);
      if (id) seen.set(id, i);
    });
  }
  const external = collectReferences(snapshot, groupIds, replace, problems);
  const what = {
    action: 'directory.import',
    target: null,
    parameters: {
      replace,
      sections: Object.keys(snapshot).filter((section) => Array.isArray(snapshot[section as SnapshotSection])),
    },
  } as const;
  if (problems.length) {
    problems.push(...(await findMissingReferences(knex, external)));
    const refused = new DirectoryImportError(problems);
    if (who) await recordFailedAndThrow(knex, who, what, refused);
    throw refused;
  }

  const write = async (trx: Knex.Transaction) => {
    const missing = await findMissingReferences(trx, external);
    if (missing.length) throw new DirectoryImportError(missing);
    return writeSnapshot(trx, snapshot, groupIds, replace).catch(
      (error: { code?: string; table?: string; detail?: string }) => {
        // A uniqueness clash with rows outside the file (e.g. another company's internal_id).
        if (error.code === '23505') throw new DirectoryImportError([`${error.table}: ${error.detail}`]);
        throw error;
      },
    );
  };
  // An operator's import is audited in its own transaction; start's demo import (no operator) is not.
  const summary = await (who ? auditedChange(knex, who, what, write) : knex.transaction(write));
  summary.durationMs = Date.now() - started;
  return summary;
}

async function findMissingReferences(trx: Knex, external: ExternalReferences): Promise<string[]> {
  const problems: string[] = [];
  const check = async <K extends string | number>(map: Map<K, string[]>, table: string, cast: string, noun: string) => {
    if (!map.size) return;
    const ids = [...map.keys()];
    const { rows } = await trx.raw<{ rows: { id: K }[] }>(`SELECT id FROM ?? WHERE id = ANY(?::${cast}[])`, [
      table,
      ids as Knex.RawBinding,
    ]);
    const found = new Set(rows.map((r) => String(r.id)));
    for (const [id, paths] of map) {
      if (!found.has(String(id)))
        for (const path of paths) problems.push(`${path}: unknown ${noun} ${JSON.stringify(id)}`);
    }
  };
  await check(external.companies, 'companies', 'text', 'company');
  await check(external.jobs, 'jobs', 'text', 'job');
  await check(external.users, 'users', 'bigint', 'user');
  await check(external.groups, 'scim_groups', 'uuid', 'group');
  return problems;
}

async function writeSnapshot(
  trx: Knex.Transaction,
  s: DirectorySnapshot,
  groupIds: string[],
  replace: boolean,
): Promise<ImportSummary> {
  const summary: ImportSummary = {};
  const track: Track = (section, total, { inserted, updated }, deleted = 0) => {
    summary[section] = { inserted, updated, unchanged: total - inserted - updated, deleted };
  };

  if (s.companies) {
    const rows = s.companies.map((c) => ({
      id: c.id,
      internal_id: c.internal_id ?? null,
      name: c.name,
      has_config: c.has_config ?? false,
      settings: c.settings ?? {},
    }));
    const deleted = replace ? await deleteAbsent(trx, 'companies', ['id'], ['text'], [rows.map((r) => r.id)]) : 0;
    const written = await upsertInChunks(
      trx,
      rows,
      `
      INSERT INTO companies (id, internal_id, name, has_config, settings)
      SELECT id, internal_id, name, has_config, settings FROM jsonb_to_recordset(?::jsonb)
        AS r(id text, internal_id bigint, name text, has_config boolean, settings jsonb)
      ON CONFLICT (id) DO UPDATE SET internal_id = EXCLUDED.internal_id, name = EXCLUDED.name,
        has_config = EXCLUDED.has_config, settings = EXCLUDED.settings, updated_at = now()
      WHERE (companies.internal_id, companies.name, companies.has_config, companies.settings)
        IS DISTINCT FROM (EXCLUDED.internal_id, EXCLUDED.name, EXCLUDED.has_config, EXCLUDED.settings)`,
    );
    track('companies', rows.length, written, deleted);
  }

  if (s.users) {
    const rows = s.users.map((u) => ({
      id: u.id,
      first_name: u.first_name,
      last_name: u.last_name,
      email_primary: u.email_primary,
      emails: [u.email_primary, ...(u.emails ?? []).filter((e) => e !== u.email_primary)].filter(
        (e, i, all) => all.indexOf(e) === i,
      ),
      is_agency_user: u.is_agency_user ?? false,
    }));
    const deleted = replace ? await deleteAbsent(trx, 'users', ['id'], ['bigint'], [rows.map((r) => r.id)]) : 0;
    const written = await upsertInChunks(
      trx,
      rows,
      `
      INSERT INTO users (id, first_name, last_name, email_primary, emails, is_agency_user)
      SELECT id, first_name, last_name, email_primary, emails, is_agency_user FROM jsonb_to_recordset(?::jsonb)
        AS r(id bigint, first_name text, last_name text, email_primary text, emails text[], is_agency_user boolean)
      ON CONFLICT (id) DO UPDATE SET first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name,
        email_primary = EXCLUDED.email_primary, emails = EXCLUDED.emails, is_agency_user = EXCLUDED.is_agency_user,
          updated_at = now()
      WHERE (users.first_name, users.last_name, users.email_primary, users.emails, users.is_agency_user)
        IS DISTINCT FROM (EXCLUDED.first_name, EXCLUDED.last_name, EXCLUDED.email_primary, EXCLUDED.emails,
          EXCLUDED.is_agency_user)`,
    );
    track('users', rows.length, written, deleted);
  }

  if (s.jobs) {
    const rows = s.jobs.map((j) => ({
      id: j.id,
      company_id: j.company_id,
      internal_id: j.internal_id ?? null,
      internal_reference: j.internal_reference ?? null,
      title: j.title,
      from_date: j.from_date ?? null,
      to_date: j.to_date ?? null,
    }));
    const deleted = replace ? await deleteAbsent(trx, 'jobs', ['id'], ['text'], [rows.map((r) => r.id)]) : 0;
    const written = await upsertInChunks(
      trx,
      rows,
      `
      INSERT INTO jobs (id, company_id, internal_id, internal_reference, title, from_date, to_date)
      SELECT id, company_id, internal_id, internal_reference, title, from_date, to_date
        FROM jsonb_to_recordset(?::jsonb)
        AS r(id text, company_id text, internal_id bigint, internal_reference text, title text, from_date date,
          to_date date)
      ON CONFLICT (id) DO UPDATE SET company_id = EXCLUDED.company_id, internal_id = EXCLUDED.internal_id,
        internal_reference = EXCLUDED.internal_reference, title = EXCLUDED.title, from_date = EXCLUDED.from_date,
        to_date = EXCLUDED.to_date, updated_at = now()
      WHERE (jobs.company_id, jobs.internal_id, jobs.internal_reference, jobs.title, jobs.from_date, jobs.to_date)
        IS DISTINCT FROM (EXCLUDED.company_id, EXCLUDED.internal_id, EXCLUDED.internal_reference, EXCLUDED.title,
          EXCLUDED.from_date, EXCLUDED.to_date)`,
    );
    track('jobs', rows.length, written, deleted);
  }

  if (s.company_users) await writeMemberships(trx, 'company_users', 'company_id', s.company_users, replace, track);
  if (s.job_users) await writeMemberships(trx, 'job_users', 'job_id', s.job_users, replace, track);
  if (s.groups) await writeGroups(trx, s.groups, groupIds, replace, track);
  if (s.apps) await writeApps(trx, s.apps, replace, track);
  return summary;
}

type Written = { inserted: number; updated: number };
type Track = (section: string, total: number, written: Written, deleted?: number) => void;

/** Upserts company or job memberships (role updated in place). */
async function writeMemberships<P extends 'company_id' | 'job_id'>(
  trx: Knex.Transaction,
  table: 'company_users' | 'job_users',
  parent: P,
  rows: Array<Record<P, string> & { user_id: number; role: string }>,
  replace: boolean,
  track: Track,
): Promise<void> {
  const deleted = replace
    ? await deleteAbsent(
        trx,
        table,
        [parent, 'user_id'],
        ['text', 'bigint'],
        [rows.map((r) => r[parent]), rows.map((r) => r.user_id)],
      )
    : 0;
  // Identifiers come from the two literal unions above, never from input.
  const written = await upsertInChunks(
    trx,
    rows,
    `
    INSERT INTO ${table} (${parent}, user_id, role)
    SELECT ${parent}, user_id, role FROM jsonb_to_recordset(?::jsonb) AS r(${parent} text, user_id bigint, role text)
    ON CONFLICT (${parent}, user_id) DO UPDATE SET role = EXCLUDED.role WHERE ${table}.role <> EXCLUDED.role`,
  );
  track(table, rows.length, written, deleted);
}

async function writeGroups(
  trx: Knex.Transaction,
  groups: NonNullable<DirectorySnapshot['groups']>,
  ids: string[],
  replace: boolean,
  track: Track,
) {
  const rows = groups.map((g, i) => ({
    id: ids[i],
    external_id: g.external_id ?? null,
    display_name: g.display_name,
    created: g.created ?? null,
    last_modified: g.last_modified ?? null,
  }));
  const members = groups.flatMap((g, i) =>
    (g.members ?? []).map((m) => ({
      group_id: ids[i],
      member_user_id: m.type === 'User' ? Number(m.value) : null,
      member_group_id: m.type === 'Group' ? m.value.toLowerCase() : null,
    })),
  );
  const deleted = replace ? await deleteAbsent(trx, 'scim_groups', ['id'], ['uuid'], [ids]) : 0;

  await trx.raw(`CREATE TEMP TABLE incoming_groups (id uuid PRIMARY KEY, external_id text, display_name text,
    created timestamptz, last_modified timestamptz) ON COMMIT DROP`);
  await trx.raw(
    `CREATE TEMP TABLE incoming_members (group_id uuid, member_user_id bigint, member_group_id uuid) ON COMMIT DROP`,
  );
  await inChunks(
    trx,
    rows,
    `INSERT INTO incoming_groups SELECT * FROM jsonb_to_recordset(?::jsonb)
    AS r(id uuid, external_id text, display_name text, created timestamptz, last_modified timestamptz)`,
  );
  await inChunks(
    trx,
    members,
    `INSERT INTO incoming_members SELECT * FROM jsonb_to_recordset(?::jsonb)
    AS r(group_id uuid, member_user_id bigint, member_group_id uuid)`,
  );
  await trx.raw('ANALYZE incoming_groups; ANALYZE incoming_members');

  // A group changes (version + 1, lastModified now unless the file says) only when an attribute or its
  // member list differs, so re-importing the same file leaves the same state.
  const updated = await trx.raw(`
    WITH member_changes AS (
      (SELECT m.group_id, m.member_user_id, m.member_group_id FROM scim_group_members m
        JOIN incoming_groups g ON g.id = m.group_id
       EXCEPT SELECT group_id, member_user_id, member_group_id FROM incoming_members)
      UNION
      (SELECT group_id, member_user_id, member_group_id FROM incoming_members
       EXCEPT SELECT m.group_id, m.member_user_id, m.member_group_id FROM scim_group_members m
         JOIN incoming_groups g ON g.id = m.group_id)
    )
    UPDATE scim_groups g SET external_id = r.external_id, display_name = r.display_name,
      created = COALESCE(r.created, g.created), last_modified = COALESCE(r.last_modified, now()),
        version = g.version + 1
    FROM incoming_groups r
    WHERE g.id = r.id AND (
      (g.external_id, g.display_name) IS DISTINCT FROM (r.external_id, r.display_name)
      OR (r.created IS NOT NULL AND r.created <> g.created)
      OR (r.last_modified IS NOT NULL AND r.last_modified <> g.last_modified)
      OR EXISTS (SELECT 1 FROM member_changes c WHERE c.group_id = r.id))`);
  const inserted = await trx.raw(`
    INSERT INTO scim_groups (id, external_id, display_name, created, last_modified)
    SELECT id, external_id, display_name, COALESCE(created, now()), COALESCE(last_modified, created, now())
      FROM incoming_groups
    ON CONFLICT (id) DO NOTHING`);

  // The file's member list is the whole truth for each group it contains.
  const membersRemoved = await trx.raw(`
    DELETE FROM scim_group_members m USING incoming_groups g WHERE m.group_id = g.id AND NOT EXISTS (
      SELECT 1 FROM incoming_members i WHERE i.group_id = m.group_id
        AND i.member_user_id IS NOT DISTINCT FROM m.member_user_id
          AND i.member_group_id IS NOT DISTINCT FROM m.member_group_id)`);
  const membersAdded = await trx.raw(`
    INSERT INTO scim_group_members (group_id, member_user_id, member_group_id)
    SELECT group_id, member_user_id, member_group_id FROM incoming_members ON CONFLICT DO NOTHING`);
  track('groups', rows.length, { inserted: inserted.rowCount ?? 0, updated: updated.rowCount ?? 0 }, deleted);
  // A membership has no attributes of its own: it is added, kept or removed.
  track(
    'group_members',
    members.length,
    { inserted: membersAdded.rowCount ?? 0, updated: 0 },
    membersRemoved.rowCount ?? 0,
  );
}

async function writeApps(
  trx: Knex.Transaction,
  apps: NonNullable<DirectorySnapshot['apps']>,
  replace: boolean,
  track: Track,
) {
  const appIds = apps.map((a) => a.app_id);
  const deleted = replace ? await deleteAbsent(trx, 'partner_apps', ['app_id'], ['text'], [appIds]) : 0;
  const { rows: existing } = await trx.raw<{
    rows: { app_id: string; name: string; key_salt: Buffer; key_hash: Buffer; companies: string[] }[];
  }>(
    `SELECT a.app_id, a.name, a.key_salt, a.key_hash,
       ARRAY(SELECT company_id FROM partner_app_companies c WHERE c.app_id = a.app_id ORDER BY company_id) AS companies
     FROM partner_apps a WHERE a.app_id = ANY(?::text[])`,
    [appIds],
  );
  const stored = new Map(
    existing.map((r) => [r.app_id, { name: r.name, salt: r.key_salt, hash: r.key_hash, companies: r.companies }]),
  );
  const written: Written = { inserted: 0, updated: 0 };
  for (const app of apps) {
    // Re-importing the same key keeps the stored hash, so the import stays idempotent.
    const current = stored.get(app.app_id);
    const sameKey = current !== undefined && verifyAppKey(app.app_key, current);
    const { salt, hash } = current && sameKey ? current : hashAppKey(app.app_key);
    const companies = [...new Set(app.company_ids)].sort();
    if (!current) written.inserted++;
    else if (
      !sameKey ||
      current.name !== (app.name ?? app.app_id) ||
      current.companies.join('\n') !== companies.join('\n')
    )
      written.updated++;
    await trx.raw(
      `INSERT INTO partner_apps (app_id, name, key_salt, key_hash) VALUES (?, ?, ?, ?)
       ON CONFLICT (app_id) DO UPDATE SET name = EXCLUDED.name, key_salt = EXCLUDED.key_salt,
         key_hash = EXCLUDED.key_hash`,
      [app.app_id, app.name ?? app.app_id, salt, hash],
    );
  }
  await trx.raw('DELETE FROM partner_app_companies WHERE app_id = ANY(?::text[])', [appIds]);
  const grants = apps.flatMap((a) =>
    [...new Set(a.company_ids)].map((company_id) => ({ app_id: a.app_id, company_id })),
  );
  await inChunks(
    trx,
    grants,
    `
    INSERT INTO partner_app_companies (app_id, company_id)
    SELECT app_id, company_id FROM jsonb_to_recordset(?::jsonb) AS r(app_id text, company_id text)`,
  );
  track('apps', apps.length, written, deleted);
}

/**
 * Runs an INSERT … ON CONFLICT DO UPDATE … WHERE (changed) once per chunk, and counts what it did: a row
 * PostgreSQL inserted has xmax 0, an updated one not, and an unchanged one is not returned at all.
 */
async function upsertInChunks(trx: Knex.Transaction, rows: object[], upsert: string): Promise<Written> {
  const written: Written = { inserted: 0, updated: 0 };
  for (let i = 0; i < rows.length; i += CHUNK) {
    const {
      rows: [counts],
    } = await trx.raw<{ rows: Array<{ inserted: number; updated: number }> }>(
      `WITH written AS (${upsert} RETURNING (xmax = 0) AS inserted)
       SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated
         FROM written`,
      [JSON.stringify(rows.slice(i, i + CHUNK))],
    );
    written.inserted += counts.inserted;
    written.updated += counts.updated;
  }
  return written;
}

/** Runs `sql` once per chunk of rows, with the chunk bound as one JSON array parameter. */
async function inChunks(trx: Knex.Transaction, rows: object[], sql: string) {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await trx.raw(sql, [JSON.stringify(rows.slice(i, i + CHUNK))]);
  }
}

/** Deletes the rows of `table` whose key is not among `keys` (parallel arrays, one per key column). */
async function deleteAbsent(
  trx: Knex.Transaction,
  table: string,
  columns: string[],
  types: string[],
  keys: Knex.RawBinding[][],
): Promise<number> {
  const unnestArgs = types.map((t) => `?::${t}[]`).join(', ');
  const match = columns.map((_, i) => `k.c${i} = t.??`).join(' AND ');
  const aliases = columns.map((_, i) => `c${i}`).join(', ');
  const result = await trx.raw(
    `DELETE FROM ?? AS t WHERE NOT EXISTS (SELECT 1 FROM unnest(${unnestArgs}) AS k(${aliases}) WHERE ${match})`,
    [table, ...(keys as Knex.RawBinding[]), ...columns],
  );
  return result.rowCount ?? 0;
}
