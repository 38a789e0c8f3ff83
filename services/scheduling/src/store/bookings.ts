import {
  type IdempotencyRequest,
  isUniqueViolation,
  newId,
  type Origin,
  rememberedAnswer,
  type Sql,
  type TransactionSql,
  withIdempotency,
} from "@funil/db";
import { type AppointmentRecord, type BookingDraft, CREATED_BY_SOURCE } from "../booking.js";
import { mustNotBeErased } from "./erasures.js";
import { addToDay, type EmitMeetingEvent, mapBookingError } from "./rows.js";

/** A booking request after its checks: the draft to book, or the failure a key remembers instead. */
export type Checked = { draft: BookingDraft } | { failed: unknown };

/** The meeting a draft books: nothing in it comes from the database. */
function meetingOf(
  workspaceId: string,
  d: BookingDraft,
  now: Date,
  recovered: string | null,
): AppointmentRecord {
  return {
    id: newId("apt", now.getTime()),
    workspaceId,
    calendarId: d.calendarId,
    calendarKey: d.calendarKey,
    contactId: d.contactId,
    contactName: d.contactName,
    opportunityId: d.opportunityId,
    title: d.title,
    location: d.location,
    conferenceUrl: d.conferenceUrl,
    startAt: d.startAt,
    endAt: d.endAt,
    localDay: d.localDay,
    assigneeUserId: d.assigneeUserId,
    status: "scheduled",
    outcome: null,
    outcomeAt: null,
    canceledAt: null,
    cancelReason: null,
    source: d.source,
    createdByUserId: null,
    createdBySource: CREATED_BY_SOURCE,
    recoveredFromAppointmentId: recovered,
    createdAt: now,
    updatedAt: now,
  };
}

/** The row of a meeting, as its columns. */
const rowOf = (m: AppointmentRecord) => ({
  id: m.id,
  workspace_id: m.workspaceId,
  calendar_id: m.calendarId,
  calendar_key: m.calendarKey,
  contact_id: m.contactId,
  contact_name: m.contactName,
  opportunity_id: m.opportunityId,
  title: m.title,
  location: m.location,
  conference_url: m.conferenceUrl,
  start_at: m.startAt,
  end_at: m.endAt,
  local_day: m.localDay,
  assignee_user_id: m.assigneeUserId,
  source: m.source,
  created_by_source: m.createdBySource,
  recovered_from_appointment_id: m.recoveredFromAppointmentId,
  created_at: m.createdAt,
  updated_at: m.updatedAt,
});

/** The contact's latest noshow that no meeting recovers yet (docs/api/meetings.md §POST /appointments). */
async function unrecoveredNoshow(tx: TransactionSql, workspaceId: string, contactId: string) {
  const [row] = await tx<{ id: string }[]>`
    select a.id from appointments a
    where a.workspace_id = ${workspaceId} and a.contact_id = ${contactId} and a.outcome = 'noshow'
      and not exists (select 1 from appointments r where r.recovered_from_appointment_id = a.id)
    order by a.start_at desc, a.id desc limit 1`;
  return row?.id ?? null;
}

/**
 * The meeting, its event and its day's place, sent together (one round trip
 * to PostgreSQL): the exclusion constraint refuses an overlap, the day's
 * check a place above the cap. The day's row is written last, so the lock
 * every booking of that day waits on is held the shortest time.
 */
async function insertMeeting(
  tx: TransactionSql,
  emit: EmitMeetingEvent,
  meeting: AppointmentRecord,
  cap: number,
  by: Origin,
) {
  await Promise.all([
    tx`insert into appointments ${tx(rowOf(meeting))}`,
    emit(tx, "meeting.booked", meeting, by),
    addToDay(tx, meeting.calendarId, meeting.localDay, cap),
  ]);
  return meeting;
}

/**
 * Books a checked draft in `tx`: only SQL, nothing that leaves the process. The contact's erasure and
 * its booking take turns (mustNotBeErased): the name crm gave never outlives the erasure.
 */
async function bookIn(
  tx: TransactionSql,
  emit: EmitMeetingEvent,
  workspaceId: string,
  d: BookingDraft,
  now: Date,
  by: Origin,
) {
  await mustNotBeErased(tx, workspaceId, d.contactId);
  // Two bookings of one contact may pick the same noshow: the unique index lets one have it, the
  // other looks again once the first has committed (in a savepoint, needed only then).
  for (let attempt = 0; ; attempt++) {
    const recovered = await unrecoveredNoshow(tx, workspaceId, d.contactId);
    const meeting = meetingOf(workspaceId, d, now, recovered);
    try {
      if (recovered === null) return await insertMeeting(tx, emit, meeting, d.dailyCap, by);
      return await tx.savepoint((sp) => insertMeeting(sp, emit, meeting, d.dailyCap, by));
    } catch (err) {
      if (recovered !== null && attempt < 5 && isUniqueViolation(err, "appointments_recovers_once")) continue;
      mapBookingError(err);
    }
  }
}

/** Writing meetings: a booking, and a booking under an Idempotency-Key. */
export function bookingStore(sql: Sql, emit: EmitMeetingEvent) {
  return {
    async book(workspaceId: string, draft: BookingDraft, now: Date, by: Origin): Promise<AppointmentRecord> {
      return sql.begin((tx) => bookIn(tx, emit, workspaceId, draft, now, by));
    },

    /** What the key already answers (docs/api/conventions.md §Idempotency-Key), read before any check. */
    async rememberedAnswer(request: IdempotencyRequest, now: Date) {
      return rememberedAnswer(sql, request, { now });
    },

    /**
     * Books under an Idempotency-Key: the key's claim and the meeting commit
     * together (docs/api/conventions.md §Idempotency-Key). The request was
     * checked before (crm asked outside any transaction): its draft is booked,
     * or its failure is remembered under the key and thrown.
     */
    async bookOnce(
      request: IdempotencyRequest,
      checked: Checked,
      now: Date,
      by: Origin,
      encode: (a: AppointmentRecord) => unknown,
    ) {
      return withIdempotency(sql, request, { now, encode }, async (tx) => {
        if ("failed" in checked) throw checked.failed;
        return bookIn(tx, emit, request.workspaceId, checked.draft, now, by);
      });
    },
  };
}
