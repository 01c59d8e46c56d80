const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})?$/i;

/**
 * Validates an xsd:dateTime (RFC 7643 section 2.3.5) and returns it in a form PostgreSQL reads as
 * timestamptz with the same instant: the UTC offset is kept, and a missing offset means UTC.
 * Returns undefined for anything that is not a real date and time, so no value reaches SQL that
 * PostgreSQL would reject.
 */
export function normaliseDateTime(text: string): string | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction = '', offset = 'Z'] = match;
  const y = Number(year);
  const m = Number(month);
  if (y < 1 || m < 1 || m > 12 || Number(day) < 1 || Number(day) > daysInMonth(y, m)) return undefined;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  if (offset.toUpperCase() !== 'Z') {
    const [offsetHours, offsetMinutes] = offset.slice(1).split(':').map(Number);
    if (offsetHours > 14 || offsetMinutes > 59 || (offsetHours === 14 && offsetMinutes > 0)) return undefined;
  }
  return `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}${offset.toUpperCase()}`;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
}
