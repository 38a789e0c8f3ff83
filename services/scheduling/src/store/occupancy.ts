import type { Sql } from "@funil/db";
import type { LocalDay } from "../local-time.js";
import type { Occupancy } from "../slots.js";

const DAY_MS = 86_400_000;

/** One assignee's merged busy intervals, and its meetings of the calendar per day number (from the first day). */
type Busy = {
  assigneeUserId: string;
  starts: number[] | null;
  ends: number[] | null;
  days: Record<string, number> | null;
};
type Range = { from: Date; to: Date };
type Days = { first: LocalDay; last: LocalDay };

/**
 * Every scheduled meeting of the assignees starting from two days before the range (none is longer:
 * appointments_within_two_days) to two days after it (the last local day's end): one index-only scan
 * (appointments_busy), one row per assignee. Its busy time in the range as merged intervals (range_agg
 * joins meetings that touch: back-to-back meetings, a full day, are one interval, where a list of every
 * meeting was thousands of numbers to send and parse), and its meetings of this calendar counted per
 * local day of the range, by day number from the first. As JSON: JSON.parse reads it faster than the
 * driver's array parser.
 */
function busyOf(
  sql: Sql,
  workspaceId: string,
  calendar: { id: string; assigneeUserIds: string[] },
  range: Range,
  days: Days,
) {
  const inRange = sql`end_at > ${range.from} and start_at < ${range.to}`;
  const ofCalendar = sql`calendar_id = ${calendar.id} and local_day between ${days.first} and ${days.last}`;
  const epochMs = (bound: "lower" | "upper") => sql.unsafe(`round(date_part('epoch', ${bound}(r)) * 1000)`);
  return sql<Busy[]>`
    select assignee_user_id,
      (select json_agg(${epochMs("lower")}) from unnest(busy) r) as starts,
      (select json_agg(${epochMs("upper")}) from unnest(busy) r) as ends,
      (select json_object_agg(day, count) from (select day, count(*) from unnest(days) day group by day) c)
        as days
    from (
      select assignee_user_id,
        range_agg(tstzrange(start_at, end_at)) filter (where ${inRange}) as busy,
        array_agg(local_day - ${days.first}::date) filter (where ${ofCalendar}) as days
      from appointments
      where workspace_id = ${workspaceId} and status = 'scheduled'
        and assignee_user_id = any(${calendar.assigneeUserIds})
        and start_at >= ${new Date(range.from.getTime() - 2 * DAY_MS)}
        and start_at < ${new Date(range.to.getTime() + 2 * DAY_MS)}
      group by assignee_user_id
    ) a`;
}

/** Meetings per assignee and local day ("<assignee> <day>"), from the counts per day number. */
function perAssigneeDayOf(busy: Busy[], days: Days): Map<string, number> {
  const perAssigneeDay = new Map<string, number>();
  const first = Date.parse(`${days.first}T00:00:00Z`);
  const dayName = (n: string) => new Date(first + Number(n) * DAY_MS).toISOString().slice(0, 10);
  for (const r of busy)
    for (const [n, count] of Object.entries(r.days ?? {}))
      perAssigneeDay.set(`${r.assigneeUserId} ${dayName(n)}`, count);
  return perAssigneeDay;
}

/** What free slots are built on (docs/api/meetings.md §GET /calendars/{id}/slots). */
export function occupancyStore(sql: Sql) {
  return {
    /** The assignees' busy time in the range, and the calendar's meetings per local day and per assignee. */
    async occupancy(
      workspaceId: string,
      calendar: { id: string; assigneeUserIds: string[] },
      range: Range,
      days: Days,
    ): Promise<Occupancy> {
      const [busy, perDay] = await Promise.all([
        busyOf(sql, workspaceId, calendar, range, days),
        sql<{ day: string; count: number }[]>`
          select local_day::text as day, count from day_counts
          where calendar_id = ${calendar.id} and local_day between ${days.first} and ${days.last}`,
      ]);
      return {
        busy: new Map(busy.map((r) => [r.assigneeUserId, { starts: r.starts ?? [], ends: r.ends ?? [] }])),
        perDay: new Map(perDay.map((r) => [r.day, r.count])),
        perAssigneeDay: perAssigneeDayOf(busy, days),
      };
    },
  };
}
