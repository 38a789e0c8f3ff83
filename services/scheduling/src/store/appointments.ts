import { coalescedReads, pageLimit, plannedPerCall, type Sql } from "@funil/db";
import type { AppointmentRecord, Outcome } from "../booking.js";
import type { LocalDay } from "../local-time.js";
import { bookingStore } from "./bookings.js";
import { meetingChangeStore } from "./meeting-changes.js";
import { occupancyStore } from "./occupancy.js";
import { columns, type EmitMeetingEvent } from "./rows.js";

export type { EmitMeetingEvent } from "./rows.js";

/** Filters of GET /appointments (docs/api/meetings.md §GET /appointments). */
export interface AppointmentFilters {
  from?: Date;
  to?: Date;
  status: "scheduled" | "canceled" | "all";
  calendarKey?: string;
  createdAfter?: Date;
  updatedAfter?: Date;
  outcome?: Outcome;
}

/**
 * A page of `take` meetings by start time, after the last one of the previous page; returned unexecuted
 * so that explain.test.ts EXPLAINs the very statement. The usual page sizes are written into the
 * statement (pageLimit) so that PostgreSQL keeps its plan: every filter but createdAfter and
 * updatedAfter is an equality or a start_at range on an index in (start_at, id) order, which the kept
 * plan walks as a plan made for the values does. createdAfter and updatedAfter need their values
 * planned: a recent one reads its few rows by created_at or updated_at and sorts them, an old one walks
 * start_at and filters. A named statement with `limit $n` does not ensure that (after five calls
 * PostgreSQL kept the plan that walks start_at and read the whole workspace for a recent poll), so
 * those are sent unnamed (plannedPerCall), planned at every call.
 */
export function listQuery(
  sql: Sql,
  workspaceId: string,
  f: AppointmentFilters,
  take: number,
  after?: [Date, string],
) {
  const c = [sql`workspace_id = ${workspaceId}`];
  if (f.status !== "all") c.push(sql`status = ${f.status}`);
  if (f.from) c.push(sql`start_at >= ${f.from}`);
  if (f.to) c.push(sql`start_at < ${f.to}`);
  if (f.calendarKey) c.push(sql`calendar_key = ${f.calendarKey}`);
  if (f.createdAfter) c.push(sql`created_at > ${f.createdAfter}`);
  if (f.updatedAfter) c.push(sql`updated_at > ${f.updatedAfter}`);
  if (f.outcome) c.push(sql`outcome = ${f.outcome}`);
  if (after) c.push(sql`(start_at, id) > (${after[0]}, ${after[1]})`);
  const where = c.reduce((acc, x) => sql`${acc} and ${x}`);
  const planned = !f.createdAfter && !f.updatedAfter;
  const query = sql<AppointmentRecord[]>`
    select ${columns(sql)} from appointments where ${where} order by start_at, id
    ${pageLimit(sql, take, planned)}`;
  return planned ? query : plannedPerCall(query);
}

/** Reading meetings: a list, one meeting, a day's count. */
function meetingReads(sql: Sql) {
  return {
    /** The page's statement, run when awaited (or read raw: packages/rpc row-pages.ts). */
    list: (workspaceId: string, f: AppointmentFilters, take: number, after?: [Date, string]) =>
      listQuery(sql, workspaceId, f, take, after),

    /** A meeting by id; the reads of one RPC batch in one statement. */
    get: coalescedReads<AppointmentRecord>(sql, {
      async one(workspaceId, id) {
        const [row] = await sql<AppointmentRecord[]>`
          select ${columns(sql)} from appointments where workspace_id = ${workspaceId} and id = ${id}`;
        return row;
      },
      many: (keys) => sql<AppointmentRecord[]>`
        select ${columns(sql)} from appointments where (workspace_id, id) in ${keys}`,
    }),

    /** Scheduled meetings of a calendar's day, as PostgreSQL counts them (what Redis is rebuilt from). */
    async dayCount(calendarId: string, day: LocalDay): Promise<number> {
      const [row] = await sql<{ count: number }[]>`
        select count from day_counts where calendar_id = ${calendarId} and local_day = ${day}`;
      return row?.count ?? 0;
    },
  };
}

/** scheduling's meetings in PostgreSQL: reads, bookings, changes and the occupancy slots are built on. */
export function appointmentStore(sql: Sql, emit: EmitMeetingEvent) {
  return {
    ...meetingReads(sql),
    ...bookingStore(sql, emit),
    ...meetingChangeStore(sql, emit),
    ...occupancyStore(sql),
  };
}
export type AppointmentStore = ReturnType<typeof appointmentStore>;
