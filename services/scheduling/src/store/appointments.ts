import {
  type IdempotencyRequest,
  inTransaction,
  isUniqueViolation,
  newId,
  type Sql,
  type TransactionSql,
  withIdempotency,
} from "@funil/db";
import { fail, notFound } from "@funil/errors";
import {
  type AppointmentRecord,
  type BookingDraft,
  CREATED_BY_SOURCE,
  isSameTime,
  type MeetingEventType,
  type Move,
  mustBeScheduled,
  type Outcome,
} from "../booking.js";
import type { LocalDay } from "../local-time.js";
import type { Occupancy } from "../slots.js";

/** Emits a domain event inside the transaction of the change (outbox). */
export type EmitMeetingEvent = (
  tx: TransactionSql,
  type: MeetingEventType,
  meeting: AppointmentRecord,
) => Promise<void>;

/** Filters of GET /appointments (SPEC.md §4 Meetings, API.md §7). */
export interface AppointmentFilters {
  from?: Date;
  to?: Date;
  status: "scheduled" | "canceled" | "all";
  calendarKey?: string;
  createdAfter?: Date;
  updatedAfter?: Date;
  outcome?: Outcome;
}

type Db = Sql | TransactionSql;

const columns = (sql: Db) => sql`
  id, workspace_id, calendar_id, calendar_key, contact_id, contact_name, opportunity_id, title, location,
  conference_url, start_at, end_at, local_day::text as local_day, assignee_user_id, status, outcome, outcome_at,
  canceled_at, cancel_reason, source, created_by_user_id, created_by_source, recovered_from_appointment_id,
  created_at, updated_at`;

const EXCLUSION_VIOLATION = "23P01";
const DAY_MS = 86_400_000;
const CHECK_VIOLATION = "23514";

/** The two booking rules, decided by the database (API.md §7), as their domain errors. */
function mapBookingError(err: unknown): never {
  const e = err as { code?: string; constraint_name?: string };
  if (e?.code === EXCLUSION_VIOLATION && e.constraint_name === "appointments_no_overlap")
    throw fail("slot_taken", "the assignee already has a meeting at this time");
  if (e?.code === CHECK_VIOLATION && e.constraint_name === "day_counts_within_cap")
    throw fail("daily_cap_reached", "this calendar's day is at its cap of meetings");
  throw err;
}

export function appointmentStore(sql: Sql, emit: EmitMeetingEvent) {
  async function lock(tx: TransactionSql, workspaceId: string, id: string) {
    const [row] = await tx<AppointmentRecord[]>`
      select ${columns(tx)} from appointments where workspace_id = ${workspaceId} and id = ${id} for update`;
    if (!row) throw notFound("appointment");
    return row;
  }

  /** One more meeting on a calendar's day; the table's check refuses one above the cap. */
  const addToDay = (tx: TransactionSql, calendarId: string, day: LocalDay, cap: number) => tx`
    insert into day_counts (calendar_id, local_day, count, cap) values (${calendarId}, ${day}, 1, ${cap})
    on conflict (calendar_id, local_day) do update set count = day_counts.count + 1, cap = excluded.cap`;
  const removeFromDay = (tx: TransactionSql, calendarId: string, day: LocalDay) => tx`
    update day_counts set count = count - 1 where calendar_id = ${calendarId} and local_day = ${day}`;

  /** The contact's latest noshow that no meeting recovers yet (API.md §7). */
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
   * every booking of that day waits on is held the shortest time. The meeting
   * is what was inserted: nothing in it comes from the database.
   */
  async function insertMeeting(
    tx: TransactionSql,
    workspaceId: string,
    d: BookingDraft,
    now: Date,
    recovered: string | null,
  ) {
    const meeting: AppointmentRecord = {
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
    await Promise.all([
      tx`
        insert into appointments ${tx({
          id: meeting.id,
          workspace_id: workspaceId,
          calendar_id: d.calendarId,
          calendar_key: d.calendarKey,
          contact_id: d.contactId,
          contact_name: d.contactName,
          opportunity_id: d.opportunityId,
          title: d.title,
          location: d.location,
          conference_url: d.conferenceUrl,
          start_at: d.startAt,
          end_at: d.endAt,
          local_day: d.localDay,
          assignee_user_id: d.assigneeUserId,
          source: d.source,
          created_by_source: CREATED_BY_SOURCE,
          recovered_from_appointment_id: recovered,
          created_at: now,
          updated_at: now,
        })}`,
      emit(tx, "meeting.booked", meeting),
      addToDay(tx, d.calendarId, d.localDay, d.dailyCap),
    ]);
    return meeting;
  }

  async function bookIn(tx: TransactionSql, workspaceId: string, d: BookingDraft, now: Date) {
    // Two bookings of one contact may pick the same noshow: the unique index lets one have it, the
    // other looks again once the first has committed (in a savepoint, needed only then).
    for (let attempt = 0; ; attempt++) {
      const recovered = await unrecoveredNoshow(tx, workspaceId, d.contactId);
      try {
        if (recovered === null) return await insertMeeting(tx, workspaceId, d, now, null);
        return await tx.savepoint((sp) => insertMeeting(sp, workspaceId, d, now, recovered));
      } catch (err) {
        if (recovered !== null && attempt < 5 && isUniqueViolation(err, "appointments_recovers_once"))
          continue;
        mapBookingError(err);
      }
    }
  }

  function listQuery(workspaceId: string, f: AppointmentFilters, limit: number, after?: [Date, string]) {
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
    return sql<AppointmentRecord[]>`
      select ${columns(sql)} from appointments where ${where} order by start_at, id limit ${limit}`;
  }

  return {
    listQuery,

    async list(workspaceId: string, f: AppointmentFilters, limit: number, after?: [Date, string]) {
      return listQuery(workspaceId, f, limit, after);
    },

    async get(workspaceId: string, id: string): Promise<AppointmentRecord | undefined> {
      const [row] = await sql<AppointmentRecord[]>`
        select ${columns(sql)} from appointments where workspace_id = ${workspaceId} and id = ${id}`;
      return row;
    },

    async book(workspaceId: string, draft: BookingDraft, now: Date): Promise<AppointmentRecord> {
      return sql.begin((tx) => bookIn(tx, workspaceId, draft, now));
    },

    /**
     * Book under an Idempotency-Key: the key's claim and the meeting commit
     * together (API.md §9). `prepare` checks the request inside the key's
     * transaction (reading through it, never through a second connection of
     * the pool), so its failures are remembered and a replay never runs it.
     */
    async bookOnce(
      request: IdempotencyRequest,
      prepare: (tx: TransactionSql) => Promise<BookingDraft>,
      now: Date,
      encode: (a: AppointmentRecord) => unknown,
    ) {
      return withIdempotency(sql, request, { now, encode }, async (tx) =>
        bookIn(tx, request.workspaceId, await prepare(tx), now),
      );
    },

    /** Cancel frees the time and the day's place in one transaction; a canceled meeting stays as it is. */
    async cancel(workspaceId: string, id: string, reason: string | null, now: Date, outer?: TransactionSql) {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lock(tx, workspaceId, id);
        if (found.status === "canceled") return { meeting: found, changed: false };
        const [row] = await tx<AppointmentRecord[]>`
          update appointments set status = 'canceled', canceled_at = ${now}, cancel_reason = ${reason},
            updated_at = ${now}
          where id = ${id} returning ${columns(tx)}`;
        await removeFromDay(tx, found.calendarId, found.localDay);
        await emit(tx, "meeting.canceled", row!);
        return { meeting: row!, changed: true };
      });
    },

    /** Moves a scheduled meeting under the booking rules; the day's count moves with it. */
    async reschedule(workspaceId: string, id: string, move: Move, now: Date, outer?: TransactionSql) {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lock(tx, workspaceId, id);
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
          await emit(tx, "meeting.rescheduled", row!);
          return { meeting: row!, changed: true };
        } catch (err) {
          mapBookingError(err);
        }
      });
    },

    /** API.md §7: an outcome may be recorded at any time, and again (the last one stands). */
    async recordOutcome(
      workspaceId: string,
      id: string,
      outcome: Outcome,
      now: Date,
      outer?: TransactionSql,
    ) {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lock(tx, workspaceId, id);
        mustBeScheduled(found, "record an outcome of");
        const [row] = await tx<AppointmentRecord[]>`
          update appointments set outcome = ${outcome}, outcome_at = ${now}, updated_at = ${now}
          where id = ${id} returning ${columns(tx)}`;
        await emit(tx, "meeting.outcome", row!);
        return row!;
      });
    },

    /** Scheduled meetings of a calendar's day, as PostgreSQL counts them (what Redis is rebuilt from). */
    async dayCount(calendarId: string, day: LocalDay): Promise<number> {
      const [row] = await sql<{ count: number }[]>`
        select count from day_counts where calendar_id = ${calendarId} and local_day = ${day}`;
      return row?.count ?? 0;
    },

    /** What free slots depend on, for a calendar and range (API.md §7). */
    async occupancy(
      workspaceId: string,
      calendar: { id: string; assigneeUserIds: string[] },
      range: { from: Date; to: Date },
      days: { first: LocalDay; last: LocalDay },
    ): Promise<Occupancy> {
      const inRange = sql`end_at > ${range.from} and start_at < ${range.to}`;
      const ofCalendar = sql`calendar_id = ${calendar.id} and local_day between ${days.first} and ${days.last}`;
      // Every scheduled meeting of the assignees starting from two days before the range (none is longer:
      // appointments_within_two_days) to two days after it (the last local day's end): one index-only scan
      // (appointments_busy), one row per assignee. Its busy time in the range, and its meetings of this
      // calendar on the range's local days as day numbers from the first.
      const [busy, perDay] = await Promise.all([
        sql<
          Array<{
            assigneeUserId: string;
            starts: number[] | null;
            ends: number[] | null;
            days: number[] | null;
          }>
        >`
          select assignee_user_id,
            array_agg(round(date_part('epoch', start_at) * 1000)) filter (where ${inRange}) as starts,
            array_agg(round(date_part('epoch', end_at) * 1000)) filter (where ${inRange}) as ends,
            array_agg(local_day - ${days.first}::date) filter (where ${ofCalendar}) as days
          from appointments
          where workspace_id = ${workspaceId} and status = 'scheduled'
            and assignee_user_id = any(${calendar.assigneeUserIds})
            and start_at >= ${new Date(range.from.getTime() - 2 * DAY_MS)}
            and start_at < ${new Date(range.to.getTime() + 2 * DAY_MS)}
          group by assignee_user_id`,
        sql<{ day: string; count: number }[]>`
          select local_day::text as day, count from day_counts
          where calendar_id = ${calendar.id} and local_day between ${days.first} and ${days.last}`,
      ]);
      // Counted by day number first: a name per day and assignee, not per meeting.
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
      return {
        busy: new Map(busy.map((r) => [r.assigneeUserId, { starts: r.starts ?? [], ends: r.ends ?? [] }])),
        perDay: new Map(perDay.map((r) => [r.day, r.count])),
        perAssigneeDay,
      };
    },
  };
}
export type AppointmentStore = ReturnType<typeof appointmentStore>;
