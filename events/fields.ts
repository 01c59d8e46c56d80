import { z } from 'zod';

// zod's ISO checks reject impossible days (2024-02-30) and out-of-range times, not only wrong shapes.
const isoDate = z.iso.date();
const isoTime = z.iso.time({ precision: 0 });

/** `date` in the spec: YYYY-MM-DD. */
export const dateField = z.iso.date({ message: 'must be a date shaped YYYY-MM-DD' });

/**
 * `datetime` in the spec: YYYY-MM-DD HH:MM:SS, with a space (the time zone is not given). A refinement has no
 * JSON Schema, so the catalog gets the same check as a pattern built from zod's own date and time regexes.
 */
export const datetimeField = z
  .string()
  .refine((value) => {
    const [date, time, ...rest] = value.split(' ');
    return (
      rest.length === 0 && time !== undefined && isoDate.safeParse(date).success && isoTime.safeParse(time).success
    );
  }, 'must be a datetime shaped YYYY-MM-DD HH:MM:SS')
  .meta({
    pattern: `^${z.regexes.date.source.slice(1, -1)} ${z.regexes.time({ precision: 0 }).source.slice(1, -1)}$`,
    description: 'YYYY-MM-DD HH:MM:SS (time zone not given)',
  });

/**
 * What the catalog promises of a URL field, as a pattern: an http(s) URL with a host name (its last label starting
 * with a letter, no label with two hyphens in a row, since the parser decodes an `xn--` label as punycode and
 * refuses one that is not), an optional port, then anything but spaces. Every such value passes the URL parser
 * below; zod's own JSON Schema (`format: uri`) would also promise values like `HTTP:` that the parser refuses.
 */
export const URL_PATTERN =
  '^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*' +
  '[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*(:[0-9]{1,4})?([/?#][^\\s\\u0000]*)?$';

export const urlField = z
  .url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' })
  .meta({ pattern: URL_PATTERN });

/** Longest company id accepted: it is indexed in PostgreSQL and becomes the CompanyId search attribute. */
export const MAX_COMPANY_ID_LENGTH = 255;

export const companyIdField = z
  .string()
  .max(MAX_COMPANY_ID_LENGTH, `must be at most ${MAX_COMPANY_ID_LENGTH} characters`);

/** Two letters, as in ISO 639-1 languages (`en`) and ISO 3166-1 countries (`DE`). */
export const alpha2Field = z.string().regex(/^[A-Za-z]{2}$/, 'must be a two-letter (alpha-2) code');

export const integerField = z.int({ message: 'must be an integer' });

/** Objects whose keys the spec does not show (settings, custom fields): any JSON object. */
export const jsonObjectField = z.record(z.string(), z.unknown(), { message: 'must be a JSON object' });
