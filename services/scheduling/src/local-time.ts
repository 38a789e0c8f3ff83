/**
 * Wall-clock time of a calendar's zone, turned into instants with the zone's
 * rules of that very day (the IANA database of the runtime, through Intl), so
 * a DST change day has the hours it really has.
 *
 * A zone is read once per range as a ZoneClock: the spans of instants with
 * one UTC offset each. Turning a local time into an instant is then plain
 * arithmetic on epoch milliseconds, whatever the number of slots.
 */

/** A local date, "YYYY-MM-DD". */
export type LocalDay = string;

const SECOND = 1000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const minuteOfDay = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

const formats = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset at an instant, in ms (Intl's longOffset: "GMT-03:00", "GMT+05:41:16", "GMT"). */
export function offsetAt(zone: string, at: number): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    formats.set(zone, format);
  }
  const m = /GMT([+-])(\d\d):(\d\d)(?::(\d\d))?/.exec(format.format(at));
  if (!m) return 0;
  const ms = (Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4] ?? 0)) * SECOND;
  return m[1] === "-" ? -ms : ms;
}

/** Instants [from, to) during which the zone's clocks are `offset` ms ahead of UTC. */
interface Piece {
  from: number;
  to: number;
  offset: number;
}

/** A zone's offsets over a span of instants: contiguous pieces in time order (the first and last unbounded). */
export interface ZoneClock {
  pieces: Piece[];
}

/**
 * The zone is sampled every few hours and each change found is narrowed to
 * the second (offsets change on whole seconds): no zone changes its clocks
 * twice within this step.
 */
const STEP = 3 * HOUR;

/** The zone's clock over the instants [start, end]. */
export function zoneClock(zone: string, start: number, end: number): ZoneClock {
  const pieces: Piece[] = [];
  let t = Math.floor(start / HOUR) * HOUR;
  let offset = offsetAt(zone, t);
  let from = -Infinity;
  while (t < end) {
    const next = t + STEP;
    while (offsetAt(zone, next) !== offset) {
      let lo = t;
      let hi = next;
      while (hi - lo > SECOND) {
        const mid = lo + Math.floor((hi - lo) / (2 * SECOND)) * SECOND;
        if (offsetAt(zone, mid) === offset) lo = mid;
        else hi = mid;
      }
      pieces.push({ from, to: hi, offset });
      from = hi;
      offset = offsetAt(zone, hi);
      t = hi;
    }
    t = next;
  }
  pieces.push({ from, to: Infinity, offset });
  return { pieces };
}

const dayClocks = new Map<string, ZoneClock>();
const DAY_CLOCKS = 4096;

/**
 * The clock around one local day: every instant that day's times can fall on
 * (a booking's day). Remembered: a zone's past and planned rules do not change
 * while the process runs.
 */
export function dayClock(zone: string, day: LocalDay): ZoneClock {
  const key = `${zone} ${day}`;
  let clock = dayClocks.get(key);
  if (!clock) {
    clock = zoneClock(zone, midnightOf(day) - DAY, midnightOf(day) + 2 * DAY);
    if (dayClocks.size >= DAY_CLOCKS) dayClocks.delete(dayClocks.keys().next().value!);
    dayClocks.set(key, clock);
  }
  return clock;
}

/** The offset of the clock at an instant. */
function offsetOn(clock: ZoneClock, at: number): number {
  for (const p of clock.pieces) if (at < p.to) return p.offset;
  return clock.pieces.at(-1)!.offset;
}

/** A day's 00:00 read as if it were UTC: a local time is this plus its minutes. */
export function midnightOf(day: LocalDay): number {
  return Date.UTC(Number(day.slice(0, 4)), Number(day.slice(5, 7)) - 1, Number(day.slice(8, 10)));
}

/**
 * The instant at which the clocks show the local time `local` (ms, read as
 * UTC); undefined when the clocks skip it. When they show it twice, the first
 * time is the one: a local time is offered once.
 */
export function instantAt(clock: ZoneClock, local: number): number | undefined {
  // Pieces are in time order: the first that holds the time holds its earliest instant.
  for (const p of clock.pieces) {
    const at = local - p.offset;
    if (at >= p.from && at < p.to) return at;
  }
  return undefined;
}

/**
 * The instant a window ends at the local time `local`; a time the clocks
 * skip is read with the offset before the jump (as far past the jump as the
 * time is past the jump's start).
 */
export function endInstantAt(clock: ZoneClock, local: number): number {
  const at = instantAt(clock, local);
  if (at !== undefined) return at;
  let before = local - clock.pieces[0]!.offset;
  for (const p of clock.pieces) if (local - p.offset >= p.from) before = local - p.offset;
  return before;
}

/** The local day of an instant on the clock. */
export function dayOn(clock: ZoneClock, at: number): LocalDay {
  return new Date(at + offsetOn(clock, at)).toISOString().slice(0, 10);
}

/** The local day of an instant in `zone`. */
export const localDayOf = (at: Date, zone: string): LocalDay =>
  new Date(at.getTime() + offsetAt(zone, at.getTime())).toISOString().slice(0, 10);

/** Every local day from the one of `from` to the one of `to`, both included. */
export function localDaysBetween(clock: ZoneClock, from: number, to: number): LocalDay[] {
  const last = dayOn(clock, to);
  const days: LocalDay[] = [];
  for (let d = midnightOf(dayOn(clock, from)); ; d += DAY) {
    const iso = new Date(d).toISOString().slice(0, 10);
    if (iso > last) break;
    days.push(iso);
  }
  return days;
}

export const weekdayOf = (day: LocalDay) => new Date(midnightOf(day)).getUTCDay();
