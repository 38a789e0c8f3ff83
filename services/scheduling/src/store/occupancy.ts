import type { Sql } from "@funil/db";
import type { LocalDay } from "../local-time.js";
import type { Occupancy } from "../slots.js";

const DAY_MS = 86_400_000;

type Busy = { assigneeUserId: string; starts: number[] | null; ends: number[] | null; days: number[] | null };
type Range = { from: Date; to: Date };
type Days = { first: LocalDay; last: LocalDay };

/**
 * Every scheduled meeting of the assignees starting from two days before the range (none is longer:
 * appointments_within_two_days) to two days after it (the last local day's end): one index-only scan
 * (appointments_busy), one row per assignee. Its busy time in the range, and its meetings of this
 * calendar on the range's local days as day numbers from the first.
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
  return sql<Busy[]>`
    select assignee_user_id,
      array_agg(round(date_part('epoch', start_at) * 1000)) filter (where ${inRange}) as starts,
      array_agg(round(date_part('epoch', end_at) * 1000)) filter (where ${inRange}) as ends,
      array_agg(local_day - ${days.first}::date) filter (where ${ofCalendar}) as days
    from appointments
    where workspace_id = ${workspaceId} and status = 'scheduled'
      and assignee_user_id = any(${calendar.assigneeUserIds})
      and start_at >= ${new Date(range.from.getTime() - 2 * DAY_MS)}
      and start_at < ${new Date(range.to.getTime() + 2 * DAY_MS)}
    group by assignee_user_id`;
}

/** Meetings per assignee and local day ("<assignee> <day>"), counted by day number first: a name per day, not per meeting. */
function perAssigneeDayOf(busy: Busy[], days: Days): Map<string, number> {
  const perAssigneeDay = new Map<string, number>();
  const first = Date.parse(`${days.first}T00:00:00Z`);
  const span = Math.round((Date.parse(`${days.last}T00:00:00Z`) - first) / DAY_MS) + 1;
  const dayName = (n: number) => new Date(first + n * DAY_MS).toISOString().slice(0, 10);
  for (const r of busy) {
    if (!r.days) continue;
    const counts = new Array<number>(span).fill(0);
    for (const n of r.days) counts[n] = (counts[n] ?? 0) + 1;
    counts.forEach((count, n) => {
      if (count > 0) perAssigneeDay.set(`${r.assigneeUserId} ${dayName(n)}`, count);
    });
  }
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
