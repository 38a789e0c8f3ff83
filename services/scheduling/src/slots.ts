import { fail, invalid } from "@funil/errors";
import {
  endInstantOf,
  instantOf,
  type LocalDay,
  localDaysBetween,
  localOf,
  minuteOfDay,
  weekdayOf,
} from "./local-time.js";

/** A weekly window of a calendar, in its local time (API.md §2). */
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
 * The range of GET /calendars/{id}/slots (API.md §7): default now .. now + 7
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

/**
 * The grid of one local day: every start on the slot interval from each
 * window's start whose meeting ends inside the window. A local time the clocks
 * skip that day is not offered; one they show twice is offered once.
 */
export function daySlots(grid: Grid, day: LocalDay): Slot[] {
  const weekday = weekdayOf(day);
  const seen = new Map<number, Slot>();
  for (const w of grid.availability) {
    if (w.weekday !== weekday) continue;
    const endsAt = endInstantOf(day, minuteOfDay(w.end), grid.timezone).getTime();
    for (let m = minuteOfDay(w.start); m < minuteOfDay(w.end); m += grid.slotIntervalMin) {
      const start = instantOf(day, m, grid.timezone);
      if (!start) continue;
      const end = start.getTime() + grid.durationMin * MINUTE;
      if (end > endsAt) continue;
      const other = seen.get(start.getTime());
      if (!other || other.windowEndAt.getTime() < endsAt)
        seen.set(start.getTime(), {
          startAt: start,
          endAt: new Date(end),
          day,
          windowEndAt: new Date(endsAt),
        });
    }
  }
  return [...seen.values()].sort((a, b) => a.startAt.getTime() - b.startAt.getTime());
}

/** The grid's slots starting in [from, to). */
export function gridSlots(grid: Grid, from: Date, to: Date): Slot[] {
  return localDaysBetween(from, to, grid.timezone)
    .flatMap((day) => daySlots(grid, day))
    .filter((s) => s.startAt >= from && s.startAt < to);
}

/**
 * A booking's time checked against the calendar (API.md §7: 422
 * invalid_slot): a start the grid offers, in the future, and an end inside
 * the same window (endAt defaults to startAt + the duration).
 */
export function placeOnGrid(grid: Grid, startAt: Date, endAt: Date | undefined, now: Date): Slot {
  if (endAt && endAt <= startAt)
    throw invalid([{ path: "body.endAt", message: "must be after startAt" }], "body");
  if (startAt <= now) throw fail("invalid_slot", "startAt is in the past");
  const { day } = localOf(startAt, grid.timezone);
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

/** A meeting that occupies an assignee, from any calendar of the workspace. */
export interface Busy {
  assigneeUserId: string;
  startAt: Date;
  endAt: Date;
}

export interface Occupancy {
  /** Scheduled meetings of this calendar per local day (the cap's count). */
  perDay: Map<LocalDay, number>;
  /** Scheduled meetings of this calendar per assignee and local day: `${assignee} ${day}`. */
  perAssigneeDay: Map<string, number>;
  /** Every scheduled meeting of the assignees overlapping the range, in any calendar. */
  busy: Busy[];
}

/** Whether [start, end) meets one of the sorted, disjoint intervals: a binary search on their ends. */
function overlaps(intervals: Busy[], start: number, end: number): boolean {
  let lo = 0;
  let hi = intervals.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (intervals[mid]!.endAt.getTime() <= start) lo = mid + 1;
    else hi = mid;
  }
  const next = intervals[lo];
  return next !== undefined && next.startAt.getTime() < end;
}

/**
 * Free slots (API.md §7): the grid's future times on days under the cap, each
 * with the assignee round-robin picks among those free then: the fewest
 * meetings of this calendar that day, ties by the order of assigneeUserIds.
 */
export function freeSlots(
  grid: Grid & { dailyCap: number; assigneeUserIds: string[] },
  range: { from: Date; to: Date },
  occupancy: Occupancy,
): Array<Slot & { assigneeUserId: string }> {
  const byAssignee = new Map<string, Busy[]>(grid.assigneeUserIds.map((a) => [a, []]));
  for (const b of occupancy.busy) byAssignee.get(b.assigneeUserId)?.push(b);
  for (const list of byAssignee.values()) list.sort((a, b) => a.startAt.getTime() - b.startAt.getTime());

  const out: Array<Slot & { assigneeUserId: string }> = [];
  for (const slot of gridSlots(grid, range.from, range.to)) {
    if ((occupancy.perDay.get(slot.day) ?? 0) >= grid.dailyCap) continue;
    let pick: string | undefined;
    let fewest = Infinity;
    for (const assignee of grid.assigneeUserIds) {
      if (overlaps(byAssignee.get(assignee)!, slot.startAt.getTime(), slot.endAt.getTime())) continue;
      const count = occupancy.perAssigneeDay.get(`${assignee} ${slot.day}`) ?? 0;
      if (count < fewest) {
        fewest = count;
        pick = assignee;
      }
    }
    if (pick) out.push({ ...slot, assigneeUserId: pick });
  }
  return out;
}
