import { inTransaction, type Origin, type Sql, type TransactionSql } from "@funil/db";
import { type AppointmentRecord, isSameTime, type Move, mustBeScheduled, type Outcome } from "../booking.js";
import {
  addToDay,
  columns,
  type EmitMeetingEvent,
  lockMeeting,
  mapBookingError,
  removeFromDay,
} from "./rows.js";

/**
 * Changes to a booked meeting: cancel, reschedule, outcome; each locks the meeting and emits its event.
 * `outer`: the transaction that claimed the request's Idempotency-Key, when it has one.
 */
export function meetingChangeStore(sql: Sql, emit: EmitMeetingEvent) {
  return {
    /** Cancel frees the time and the day's place in one transaction; a canceled meeting stays as it is. */
    async cancel(
      workspaceId: string,
      id: string,
      reason: string | null,
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ) {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lockMeeting(tx, workspaceId, id);
        if (found.status === "canceled") return { meeting: found, changed: false };
        const [row] = await tx<AppointmentRecord[]>`
          update appointments set status = 'canceled', canceled_at = ${now}, cancel_reason = ${reason},
            updated_at = ${now}
          where id = ${id} returning ${columns(tx)}`;
        await removeFromDay(tx, found.calendarId, found.localDay);
        await emit(tx, "meeting.canceled", row!, by, found);
        return { meeting: row!, changed: true };
      });
    },

    /** Moves a scheduled meeting under the booking rules; the day's count moves with it. */
    async reschedule(
      workspaceId: string,
      id: string,
      move: Move,
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ) {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lockMeeting(tx, workspaceId, id);
        mustBeScheduled(found, "reschedule");
        if (isSameTime(found, move)) return { meeting: found, changed: false };
        try {
          const [row] = await tx<AppointmentRecord[]>`
            update appointments set start_at = ${move.startAt}, end_at = ${move.endAt},
              local_day = ${move.localDay}, assignee_user_id = ${move.assigneeUserId}, updated_at = ${now}
            where id = ${id} returning ${columns(tx)}`;
          if (move.localDay !== found.localDay) {
            // Day rows in one order in every transaction: two moves in opposite directions never deadlock.
            for (const day of [found.localDay, move.localDay].sort())
              if (day === move.localDay) await addToDay(tx, found.calendarId, day, move.dailyCap);
              else await removeFromDay(tx, found.calendarId, day);
          }
          await emit(tx, "meeting.rescheduled", row!, by, found);
          return { meeting: row!, changed: true };
        } catch (err) {
          mapBookingError(err);
        }
      });
    },

    /** docs/api/meetings.md: an outcome may be recorded at any time, and again (the last one stands). */
    async recordOutcome(
      workspaceId: string,
      id: string,
      outcome: Outcome,
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ) {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lockMeeting(tx, workspaceId, id);
        mustBeScheduled(found, "record an outcome of");
        const [row] = await tx<AppointmentRecord[]>`
          update appointments set outcome = ${outcome}, outcome_at = ${now}, updated_at = ${now}
          where id = ${id} returning ${columns(tx)}`;
        await emit(tx, "meeting.outcome", row!, by, found);
        return row!;
      });
    },
  };
}
