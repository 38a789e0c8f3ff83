import { fail, invalid } from "@funil/errors";
import {
  dayClock,
  endInstantAt,
  instantAt,
  type LocalDay,
  localDayOf,
  localDaysBetween,
  midnightOf,
  minuteOfDay,
  weekdayOf,
  type ZoneClock,
  zoneClock,
} from "./local-time.js";

/** A weekly window of a calendar, in its local time (docs/api/admin.md §Routes). */
export interface Window {
  weekday: number;
  start: string;
  end: string;
}

/** What the grid of a calendar depends on. */
export interface Grid {
  timezone: string;
  durationMin: number;
  slotIntervalMin: number;
  availability: Window[];
}

export interface Slot {
  startAt: Date;
  endAt: Date;
  day: LocalDay;
  /** Where the window that offers it ends: a longer meeting may run until then. */
  windowEndAt: Date;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
export const MAX_RANGE_DAYS = 31;
export const DEFAULT_RANGE_DAYS = 7;

/**
 * The range of GET /calendars/{id}/slots (docs/api/meetings.md §GET /calendars/{id}/slots): default now .. now + 7
 * days, at most 31 days; a `from` in the past is read as now.
 */
export function slotRange(from: Date | undefined, to: Date | undefined, now: Date): { from: Date; to: Date } {
  const start = from ?? now;
  const end = to ?? new Date(start.getTime() + DEFAULT_RANGE_DAYS * DAY);
  if (end <= start) throw invalid([{ path: "query.to", message: "must be after from" }], "query");
  if (end.getTime() - start.getTime() > MAX_RANGE_DAYS * DAY)
    throw invalid([{ path: "query.to", message: `the range is at most ${MAX_RANGE_DAYS} days` }], "query");
  return { from: start < now ? now : start, to: end };
}

/** A slot of the grid in epoch ms: what the sweep of free slots works on before any Date is made. */
interface GridTime {
  start: number;
  end: number;
  windowEnd: number;
  day: LocalDay;
}

/**
 * The grid of one local day: every start on the slot interval from each
 * window's start whose meeting ends inside the window. A local time the clocks
 * skip that day is not offered; one they show twice is offered once. Each
 * local time is an instant by arithmetic on the zone's clock (no zone lookup
 * per slot).
 */
function dayTimes(grid: Grid, clock: ZoneClock, day: LocalDay): GridTime[] {
  const weekday = weekdayOf(day);
  const midnight = midnightOf(day);
  const duration = grid.durationMin * MINUTE;
  const seen = new Map<number, GridTime>();
  for (const w of grid.availability) {
    if (w.weekday !== weekday) continue;
    const last = minuteOfDay(w.end);
    const windowEnd = endInstantAt(clock, midnight + last * MINUTE);
    for (let m = minuteOfDay(w.start); m < last; m += grid.slotIntervalMin) {
      const start = instantAt(clock, midnight + m * MINUTE);
      if (start === undefined) continue;
      const end = start + duration;
      if (end > windowEnd) continue;
      const other = seen.get(start);
      if (!other || other.windowEnd < windowEnd) seen.set(start, { start, end, windowEnd, day });
    }
  }
  const times = [...seen.values()];
  // One window gives its times in order; several on one day need sorting.
  if (times.some((t, i) => i > 0 && times[i - 1]!.start > t.start)) times.sort((a, b) => a.start - b.start);
  return times;
}

const slotOf = (t: GridTime): Slot => ({
  startAt: new Date(t.start),
  endAt: new Date(t.end),
  day: t.day,
  windowEndAt: new Date(t.windowEnd),
});

/** The grid of one local day (see dayTimes). */
export function daySlots(grid: Grid, day: LocalDay): Slot[] {
  return dayTimes(grid, dayClock(grid.timezone, day), day).map(slotOf);
}

/** The grid's times starting in [from, to), in order: one reading of the zone for the whole range. */
function gridTimes(grid: Grid, from: number, to: number): GridTime[] {
  const clock = zoneClock(grid.timezone, from - 2 * DAY, to + 2 * DAY);
  const out: GridTime[] = [];
  for (const day of localDaysBetween(clock, from, to))
    for (const t of dayTimes(grid, clock, day)) if (t.start >= from && t.start < to) out.push(t);
  return out;
}

/** The grid's slots starting in [from, to). */
export function gridSlots(grid: Grid, from: Date, to: Date): Slot[] {
  return gridTimes(grid, from.getTime(), to.getTime()).map(slotOf);
}

/**
 * A booking's time checked against the calendar (docs/api/meetings.md §POST /appointments: 422
 * invalid_slot): a start the grid offers, in the future, and an end inside
 * the same window (endAt defaults to startAt + the duration).
 */
export function placeOnGrid(grid: Grid, startAt: Date, endAt: Date | undefined, now: Date): Slot {
  if (endAt && endAt <= startAt)
    throw invalid([{ path: "body.endAt", message: "must be after startAt" }], "body");
  if (startAt <= now) throw fail("invalid_slot", "startAt is in the past");
  const day = localDayOf(startAt, grid.timezone);
  const slot = daySlots(grid, day).find((s) => s.startAt.getTime() === startAt.getTime());
  if (!slot)
    throw fail(
      "invalid_slot",
      `startAt is not a slot of this calendar (its grid of ${grid.slotIntervalMin} min inside its availability, ${grid.timezone})`,
    );
  if (!endAt) return slot;
  if (endAt > slot.windowEndAt)
    throw fail("invalid_slot", "endAt is past the end of the availability window");
  return { ...slot, endAt };
}

/** An assignee's meetings, from any calendar of the workspace: [starts[i], ends[i]) in epoch ms. */
export interface Busy {
  starts: number[];
  ends: number[];
}

export interface Occupancy {
  /** Scheduled meetings of this calendar per local day (the cap's count). */
  perDay: Map<LocalDay, number>;
  /** Scheduled meetings of this calendar per assignee and local day: `${assignee} ${day}`. */
  perAssigneeDay: Map<string, number>;
  /** Every scheduled meeting of the assignees overlapping the range, in any calendar, per assignee. */
  busy: Map<string, Busy>;
}

/**
 * An assignee's busy time as sorted, disjoint intervals (overlapping or
 * touching meetings merged), read by a pointer that only moves forward: the
 * grid asks in the order of its times.
 */
class BusySweep {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private at = 0;

  constructor(busy: Busy | undefined) {
    const starts = busy?.starts ?? [];
    const ends = busy?.ends ?? [];
    const order = starts.map((_, i) => i);
    if (starts.some((s, i) => i > 0 && starts[i - 1]! > s)) order.sort((a, b) => starts[a]! - starts[b]!);
    for (const i of order) {
      const start = starts[i]!;
      const end = ends[i]!;
      const n = this.ends.length;
      if (n > 0 && start <= this.ends[n - 1]!) this.ends[n - 1] = Math.max(this.ends[n - 1]!, end);
      else {
        this.starts.push(start);
        this.ends.push(end);
      }
    }
  }

  /** Whether [start, end) meets a busy interval; `start` never goes back between calls. */
  meets(start: number, end: number): boolean {
    while (this.at < this.ends.length && this.ends[this.at]! <= start) this.at++;
    return this.at < this.starts.length && this.starts[this.at]! < end;
  }
}

/**
 * Free slots (docs/api/meetings.md §GET /calendars/{id}/slots): the grid's future times on days under the cap, each
 * with the assignee round-robin picks among those free then: the fewest
 * meetings of this calendar that day, ties by the order of assigneeUserIds.
 * The first `max` of them only, when given: a page needs no more.
 */
export function freeSlots(
  grid: Grid & { dailyCap: number; assigneeUserIds: string[] },
  range: { from: Date; to: Date },
  occupancy: Occupancy,
  max = Number.POSITIVE_INFINITY,
): Array<Slot & { assigneeUserId: string }> {
  const assignees = grid.assigneeUserIds;
  const sweeps = assignees.map((a) => new BusySweep(occupancy.busy.get(a)));

  const out: Array<Slot & { assigneeUserId: string }> = [];
  let day: LocalDay | undefined;
  let full = false;
  let counts: number[] = [];
  for (const t of gridTimes(grid, range.from.getTime(), range.to.getTime())) {
    if (t.day !== day) {
      day = t.day;
      full = (occupancy.perDay.get(day) ?? 0) >= grid.dailyCap;
      counts = assignees.map((a) => occupancy.perAssigneeDay.get(`${a} ${day}`) ?? 0);
    }
    if (full) continue;
    let pick = -1;
    for (let i = 0; i < assignees.length; i++) {
      if (sweeps[i]!.meets(t.start, t.end)) continue;
      if (pick < 0 || counts[i]! < counts[pick]!) pick = i;
    }
    if (pick >= 0 && out.push({ ...slotOf(t), assigneeUserId: assignees[pick]! }) >= max) break;
  }
  return out;
}
