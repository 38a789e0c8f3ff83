// Date.UTC would read years 0–99 as 1900–1999: parse the bounds instead.
const MIN = Date.parse("0001-01-01T00:00:00.000Z");
const MAX = Date.parse("9999-12-31T23:59:59.999Z");

/**
 * A timestamp argument as a Date, or undefined when it does not parse or
 * falls outside the years 1–9999 that PostgreSQL and ISO-8601 share (year 0
 * parses in JavaScript but is no PostgreSQL date).
 */
export function parseTimestamp(value: string): Date | undefined {
  if (value.length > 64) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) || ms < MIN || ms > MAX ? undefined : new Date(ms);
}

/**
 * A timestamp that `timestamp` (the schema) already accepted, as a Date; an
 * absent value stays absent and a null (a PATCH's "clear") stays null.
 */
export function instant(value: string): Date;
export function instant(value: string | undefined): Date | undefined;
export function instant(value: string | null | undefined): Date | null | undefined;
export function instant(value: string | null | undefined): Date | null | undefined {
  return typeof value === "string" ? parseTimestamp(value)! : value;
}

/** The character code of a digit. */
const digit = (n: number) => 48 + n;

/**
 * `date.toISOString()`, the same string, faster: a page of 50 deals formats up
 * to 300 timestamps, and V8's own formatter showed in crm's profile of
 * GET /opportunities (bench/RESULTS.md). One flat string
 * from its character codes (a template literal made a rope of small strings,
 * flattened again when the codec wrote it). Years outside 1000–9999 (signed
 * or short) and invalid dates are left to toISOString. An absent date
 * (null, undefined) is an unset field: undefined.
 */
export function isoString(date: Date): string;
export function isoString(date: Date | null | undefined): string | undefined;
export function isoString(date: Date | null | undefined): string | undefined {
  if (!date) return undefined;
  const y = date.getUTCFullYear();
  if (!(y >= 1000 && y <= 9999)) return date.toISOString();
  const mo = date.getUTCMonth() + 1;
  const d = date.getUTCDate();
  const h = date.getUTCHours();
  const mi = date.getUTCMinutes();
  const s = date.getUTCSeconds();
  const ms = date.getUTCMilliseconds();
  // biome-ignore format: one group of codes per field of YYYY-MM-DDTHH:mm:ss.sssZ
  return String.fromCharCode(
    digit((y / 1000) | 0), digit(((y / 100) | 0) % 10), digit(((y / 10) | 0) % 10), digit(y % 10), 45,
    digit((mo / 10) | 0), digit(mo % 10), 45,
    digit((d / 10) | 0), digit(d % 10), 84,
    digit((h / 10) | 0), digit(h % 10), 58,
    digit((mi / 10) | 0), digit(mi % 10), 58,
    digit((s / 10) | 0), digit(s % 10), 46,
    digit((ms / 100) | 0), digit(((ms / 10) | 0) % 10), digit(ms % 10), 90,
  );
}

/**
 * PostgreSQL's text of a timestamptz (DateStyle ISO, any TimeZone): YYYY-MM-DD HH:MM:SS, up to six
 * fraction digits, the offset in hours and maybe minutes and seconds, " BC" before year 1.
 */
const PG_TIMESTAMPTZ =
  /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?( BC)?$/;

/**
 * A timestamptz as PostgreSQL writes it, as a Date (to the millisecond, the rest cut off as `new Date`
 * does): the parser of every pool (packages/db client.ts). `new Date(text)` reads the common form right
 * (a year from 1000, UTC), and is used for it; it reads year 0099 as 1999 and no offset with seconds
 * (a historic time zone's), which this reads by its parts. infinity and any other form go to `new Date`.
 */
export function parseTimestamptz(text: string): Date {
  const n = text.length;
  if (text.charCodeAt(0) !== 48 && text.charCodeAt(n - 3) === 43 && text.endsWith("00") && n <= 26)
    return new Date(text);
  const m = PG_TIMESTAMPTZ.exec(text);
  if (!m) return new Date(text);
  const year = m[12] ? 1 - Number(m[1]) : Number(m[1]);
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, "0")) : 0;
  const offsetS = (Number(m[9]) * 60 + Number(m[10] ?? 0)) * 60 + Number(m[11] ?? 0);
  const at = new Date(0);
  at.setUTCFullYear(year, Number(m[2]) - 1, Number(m[3]));
  at.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6]), ms);
  return new Date(at.getTime() - (m[8] === "-" ? -offsetS : offsetS) * 1000);
}
