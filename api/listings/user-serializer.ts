import type { UserRow } from './page-query';

/** The user object of spec 2.5: exactly these fields, whatever else the row carries. */
export const serializeUser = (row: UserRow): UserRow => ({
  id: row.id,
  first_name: row.first_name,
  last_name: row.last_name,
  email_primary: row.email_primary,
  emails: row.emails,
  is_agency_user: row.is_agency_user,
  role: row.role,
});
