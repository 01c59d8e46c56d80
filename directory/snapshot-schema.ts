import { z } from 'zod';
import { COMPANY_ROLES, JOB_ROLES } from '../lib/vocabulary';

const id = z.string().trim().min(1, { message: 'must be a non-empty string' }).max(255);
const internalId = z.number().int({ message: 'must be an integer' }).min(1).max(Number.MAX_SAFE_INTEGER);
const userId = z
  .number({ message: 'must be a positive integer' })
  .int({ message: 'must be a positive integer' })
  .min(1, { message: 'must be a positive integer' })
  .max(Number.MAX_SAFE_INTEGER);
const email = z.email({ message: 'not an e-mail address' });
const calendarDate = z.iso.date({ message: 'must be a date in the form YYYY-MM-DD' });
const dateTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a UTC offset' });
const jsonObject = z.record(z.string(), z.unknown(), { message: 'must be a JSON object' });

export const companySchema = z.strictObject({
  id,
  internal_id: internalId.nullish(),
  name: z.string().min(1, { message: 'must be a non-empty string' }),
  has_config: z.boolean().optional(),
  settings: jsonObject.optional(),
});

export const jobSchema = z
  .strictObject({
    id,
    internal_id: internalId.nullish(),
    company_id: id,
    title: z.string().min(1, { message: 'must be a non-empty string' }),
    internal_reference: z.string().nullish(),
    from_date: calendarDate.nullish(),
    to_date: calendarDate.nullish(),
  })
  .refine((job) => !job.from_date || !job.to_date || job.from_date <= job.to_date, {
    message: 'must not be before from_date',
    path: ['to_date'],
  });

export const userSchema = z.strictObject({
  id: userId,
  first_name: z.string(),
  last_name: z.string(),
  email_primary: email,
  emails: z.array(email).optional(),
  is_agency_user: z.boolean().optional(),
});

export const companyUserSchema = z.strictObject({
  company_id: id,
  user_id: userId,
  role: z.enum(COMPANY_ROLES, { message: `must be one of ${COMPANY_ROLES.join(', ')}` }),
});

export const jobUserSchema = z.strictObject({
  job_id: id,
  user_id: userId,
  role: z.enum(JOB_ROLES, { message: `must be one of ${JOB_ROLES.join(', ')}` }),
});

export const groupMemberSchema = z.strictObject({
  type: z.enum(['User', 'Group'], { message: 'must be User or Group' }),
  value: z.string().min(1, { message: 'must be a non-empty string' }),
});

export const groupSchema = z.strictObject({
  id: z.uuid({ message: 'must be a UUID' }).optional(),
  // Both are btree-indexed (migration 002); 500 characters stay well inside an index row in any script.
  external_id: z.string().min(1).max(500, { message: 'must be at most 500 characters' }).nullish(),
  display_name: z
    .string()
    .min(1, { message: 'must be a non-empty string' })
    .max(500, { message: 'must be at most 500 characters' }),
  created: dateTime.optional(),
  last_modified: dateTime.optional(),
  members: z.array(groupMemberSchema).optional(),
});

export const appSchema = z.strictObject({
  app_id: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/, { message: 'must be 1-100 letters, digits, dots, dashes or underscores' }),
  name: z.string().min(1).optional(),
  app_key: z.string().min(16, { message: 'must be at least 16 characters long' }),
  company_ids: z.array(id),
});

export const directorySnapshotSchema = z.strictObject({
  companies: z.array(companySchema).optional(),
  jobs: z.array(jobSchema).optional(),
  users: z.array(userSchema).optional(),
  company_users: z.array(companyUserSchema).optional(),
  job_users: z.array(jobUserSchema).optional(),
  groups: z.array(groupSchema).optional(),
  apps: z.array(appSchema).optional(),
});

export type DirectorySnapshot = z.infer<typeof directorySnapshotSchema>;
export type SnapshotSection = keyof DirectorySnapshot;

const ITEM_SCHEMAS = {
  companies: companySchema,
  jobs: jobSchema,
  users: userSchema,
  company_users: companyUserSchema,
  job_users: jobUserSchema,
  groups: groupSchema,
  apps: appSchema,
} as const;

/**
 * The items of an invalid snapshot that are valid on their own, at their original indexes, so duplicate and
 * reference checks can report in the same run as the schema errors. An invalid item leaves a hole, except a
 * company, job or user whose id alone is readable: it stays as `{ id }`, so references to it are not
 * reported as unknown on top of its own error.
 */
export function validItemsOf(input: unknown): DirectorySnapshot {
  const snapshot: Record<string, unknown[]> = {};
  if (!input || typeof input !== 'object' || Array.isArray(input)) return {};
  for (const [section, schema] of Object.entries(ITEM_SCHEMAS)) {
    const items = (input as Record<string, unknown>)[section];
    if (!Array.isArray(items)) continue;
    snapshot[section] = items.map((item) => {
      const parsed = (schema as z.ZodType).safeParse(item);
      if (parsed.success) return parsed.data;
      const rawId = (item as { id?: unknown } | null)?.id;
      const readable =
        section === 'users'
          ? typeof rawId === 'number'
          : typeof rawId === 'string' && ['companies', 'jobs'].includes(section);
      return readable ? { id: rawId } : undefined;
    });
  }
  return snapshot;
}
