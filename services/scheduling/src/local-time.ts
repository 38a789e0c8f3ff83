import { DateTime } from "luxon";

/**
 * Wall-clock time of a calendar's zone, turned into instants with the zone's
 * rules of that very day (luxon reads the IANA database of the runtime), so a
 * DST change day has the hours it really has.
 */

/** A local date, "YYYY-MM-DD". */
export type LocalDay = string;

export const minuteOfDay = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** DST offsets move the clock by these amounts at most (Lord Howe: 30 min, Troll: 2 h). */
const SHIFTS_MIN = [120, 60, 30];

/**
 * The instant at which `day` shows `minute` (0..1439) on the clocks of `zone`;
 * undefined when the clocks skip that time that day. When the clocks show it
 * twice, the first time is the one: a local time is offered once.
 */
export function instantOf(day: LocalDay, minute: number, zone: string): Date | undefined {
  const [year, month, date] = day.split("-").map(Number) as [number, number, number];
  const hour = Math.floor(minute / 60);
  const min = minute % 60;
  const dt = DateTime.fromObject({ year, month, day: date, hour, minute: min }, { zone });
  const shows = (t: DateTime) => t.day === date && t.hour === hour && t.minute === min;
  if (!shows(dt)) return undefined;
  for (const shift of SHIFTS_MIN) {
    const earlier = dt.minus({ minutes: shift });
    if (shows(earlier)) return earlier.toJSDate();
  }
  return dt.toJSDate();
}

/** The instant a window ends: `minute` may be 1440 (midnight after); a skipped time ends where the clocks jumped to. */
export function endInstantOf(day: LocalDay, minute: number, zone: string): Date {
  const [year, month, date] = day.split("-").map(Number) as [number, number, number];
  const start = DateTime.fromObject({ year, month, day: date }, { zone }).startOf("day");
  if (minute === 1440) return start.plus({ days: 1 }).startOf("day").toJSDate();
  return DateTime.fromObject(
    { year, month, day: date, hour: Math.floor(minute / 60), minute: minute % 60 },
    { zone },
  ).toJSDate();
}

/** The local day, weekday (0 = Sunday) and minute of the day of an instant in `zone`. */
export function localOf(at: Date, zone: string): { day: LocalDay; weekday: number; minute: number } {
  const dt = DateTime.fromJSDate(at, { zone });
  return { day: dt.toISODate()!, weekday: dt.weekday % 7, minute: dt.hour * 60 + dt.minute };
}

/** Every local day from the one of `from` to the one of `to`, both included. */
export function localDaysBetween(from: Date, to: Date, zone: string): LocalDay[] {
  const last = DateTime.fromJSDate(to, { zone }).toISODate()!;
  const days: LocalDay[] = [];
  for (let d = DateTime.fromJSDate(from, { zone }).startOf("day"); ; d = d.plus({ days: 1 })) {
    const iso = d.toISODate()!;
    if (iso > last) break;
    days.push(iso);
  }
  return days;
}

export const weekdayOf = (day: LocalDay) => {
  const [year, month, date] = day.split("-").map(Number) as [number, number, number];
  return new Date(Date.UTC(year, month - 1, date)).getUTCDay();
};
