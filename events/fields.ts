import { z } from 'zod';

/** A real calendar day: rejects 2024-02-30 as well as shapes other than the one the spec gives. */
function isCalendarDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** `date` in the spec: YYYY-MM-DD. */
export const dateField = z.string().refine((value) => {
  const m = DATE.exec(value);
  return m !== null && isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]));
}, 'must be a date shaped YYYY-MM-DD');

/** `datetime` in the spec: YYYY-MM-DD HH:MM:SS (the time zone is not given). */
export const datetimeField = z.string().refine((value) => {
  const m = DATETIME.exec(value);
  return (
    m !== null &&
    isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3])) &&
    Number(m[4]) < 24 &&
    Number(m[5]) < 60 &&
    Number(m[6]) < 60
  );
}, 'must be a datetime shaped YYYY-MM-DD HH:MM:SS');

export const urlField = z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' });

/** Two letters, as in ISO 639-1 languages (`en`) and ISO 3166-1 countries (`DE`). */
export const alpha2Field = z.string().regex(/^[A-Za-z]{2}$/, 'must be a two-letter (alpha-2) code');

export const integerField = z.int({ message: 'must be an integer' });

/** Objects whose keys the spec does not show (settings, custom fields): any JSON object. */
export const jsonObjectField = z.record(z.string(), z.unknown(), { message: 'must be a JSON object' });
