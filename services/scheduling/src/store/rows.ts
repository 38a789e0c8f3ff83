import type { EmitChange, Sql, TransactionSql } from "@funil/db";
import { fail, notFound } from "@funil/errors";
import type { AppointmentRecord, MeetingEventType } from "../booking.js";
import type { LocalDay } from "../local-time.js";

/** What the stores of meetings share: the columns of a meeting, its lock, its day's count, the errors of its rules. */

/** Emits a domain event inside the transaction of the change (outbox). */
export type EmitMeetingEvent = EmitChange<MeetingEventType, AppointmentRecord>;

export type Db = Sql | TransactionSql;

export const columns = (sql: Db) => sql`
  id, workspace_id, calendar_id, calendar_key, contact_id, contact_name, opportunity_id, title, location,
  conference_url, start_at, end_at, local_day::text as local_day, assignee_user_id, status, outcome, outcome_at,
  canceled_at, cancel_reason, source, created_by_user_id, created_by_source, recovered_from_appointment_id,
  created_at, updated_at`;

const EXCLUSION_VIOLATION = "23P01";
const CHECK_VIOLATION = "23514";

/** The two booking rules, decided by the database (docs/api/meetings.md), as their domain errors. */
export function mapBookingError(err: unknown): never {
  const e = err as { code?: string; constraint_name?: string };
  if (e?.code === EXCLUSION_VIOLATION && e.constraint_name === "appointments_no_overlap")
    throw fail("slot_taken", "the assignee already has a meeting at this time");
  if (e?.code === CHECK_VIOLATION && e.constraint_name === "day_counts_within_cap")
    throw fail("daily_cap_reached", "this calendar's day is at its cap of meetings");
  throw err;
}

/** A meeting of the workspace, locked for the rest of the transaction; not_found when there is none. */
export async function lockMeeting(tx: TransactionSql, workspaceId: string, id: string) {
  const [row] = await tx<AppointmentRecord[]>`
    select ${columns(tx)} from appointments where workspace_id = ${workspaceId} and id = ${id} for update`;
  if (!row) throw notFound("appointment");
  return row;
}

/** One more meeting on a calendar's day; the table's check refuses one above the cap. */
export const addToDay = (tx: TransactionSql, calendarId: string, day: LocalDay, cap: number) => tx`
  insert into day_counts (calendar_id, local_day, count, cap) values (${calendarId}, ${day}, 1, ${cap})
  on conflict (calendar_id, local_day) do update set count = day_counts.count + 1, cap = excluded.cap`;

export const removeFromDay = (tx: TransactionSql, calendarId: string, day: LocalDay) => tx`
  update day_counts set count = count - 1 where calendar_id = ${calendarId} and local_day = ${day}`;
