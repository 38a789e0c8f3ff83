import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  AppointmentInputSchema,
  AppointmentSchema,
  type AppointmentService,
  CancelAppointmentRequestSchema,
  CancelAppointmentResponseSchema,
  ListAppointmentsRequestSchema,
  RecordOutcomeRequestSchema,
  RecordOutcomeResponseSchema,
  RescheduleAppointmentRequestSchema,
  RescheduleAppointmentResponseSchema,
} from "@funil/contracts";
import { requestFingerprint, type Sql, type TransactionSql } from "@funil/db";
import { type ErrorDetail, fail, invalidReference, notFound } from "@funil/errors";
import {
  asMessageJson,
  fromApiJson,
  idempotent,
  keysetPage,
  plainOf,
  REPLAYED_HEADER,
  replayOf,
  runOnce,
} from "@funil/rpc";
import {
  cancelAppointmentBody,
  check,
  createAppointmentBody,
  idempotencyKey,
  idParam,
  instant,
  listAppointmentsQuery,
  outcomeBody,
  rescheduleAppointmentBody,
  z,
} from "@funil/schemas";
import { type AppointmentRecord, type BookingDraft, checkAssignee, mustBeScheduled } from "../booking.js";
import type { CrmDirectory } from "../crm.js";
import { placeOnGrid } from "../slots.js";
import type { AppointmentFilters, AppointmentStore } from "../store/appointments.js";
import type { CalendarStore } from "../store/calendars.js";
import type { BookingGuard } from "../store/guard.js";
import { appointmentWire } from "./wire.js";

const LIST = "appointments";
const keyHeader = z.object({ "idempotency-key": idempotencyKey });
/** Fields of a change request that are not its body. */
const NOT_BODY = ["workspaceId", "id", "idempotencyKey"];
const remember = {
  cancel: asMessageJson(CancelAppointmentResponseSchema),
  reschedule: asMessageJson(RescheduleAppointmentResponseSchema),
  outcome: asMessageJson(RecordOutcomeResponseSchema),
};

export function appointmentService(deps: {
  sql: Sql;
  appointments: AppointmentStore;
  calendars: CalendarStore;
  guard: BookingGuard;
  crm: CrmDirectory;
  clock: Clock;
}): ServiceImpl<typeof AppointmentService> {
  const { appointments, calendars, guard, crm, clock } = deps;
  const reply = (r: AppointmentRecord) => ({ appointment: appointmentWire.proto(r) });

  /** A booking request checked: its calendar, its slot, and its references (crm's contact and deal). */
  async function prepare(
    workspaceId: string,
    body: z.output<typeof createAppointmentBody>,
    now: Date,
    tx?: TransactionSql,
  ): Promise<BookingDraft> {
    // crm is asked at once, beside the calendar's read; its answers are looked at after the calendar's checks.
    const references = Promise.all([
      crm.contact(workspaceId, body.contactId),
      body.opportunityId ? crm.opportunityExists(workspaceId, body.opportunityId) : true,
    ]);
    references.catch(() => {});
    const calendar = await calendars.get(workspaceId, body.calendarId, tx);
    if (!calendar)
      throw invalidReference([
        { path: "calendarId", message: `no calendar ${body.calendarId} in this workspace` },
      ]);
    const slot = placeOnGrid(calendar, instant(body.startAt), instant(body.endAt) ?? undefined, now);
    const [contact, opportunityFound] = await references;
    const problems: ErrorDetail[] = [];
    if (!calendar.assigneeUserIds.includes(body.assigneeUserId))
      problems.push({ path: "assigneeUserId", message: "not an assignee of this calendar" });
    if (!contact)
      problems.push({ path: "contactId", message: `no contact ${body.contactId} in this workspace` });
    if (!opportunityFound)
      problems.push({
        path: "opportunityId",
        message: `no opportunity ${body.opportunityId} in this workspace`,
      });
    if (problems.length > 0) throw invalidReference(problems);
    return {
      calendarId: calendar.id,
      calendarKey: calendar.key,
      dailyCap: calendar.dailyCap,
      contactId: body.contactId,
      contactName: contact!.name,
      opportunityId: body.opportunityId ?? null,
      title: body.title ?? null,
      location: body.location ?? null,
      conferenceUrl: body.conferenceUrl ?? null,
      source: body.source ?? null,
      assigneeUserId: body.assigneeUserId,
      startAt: slot.startAt,
      endAt: slot.endAt,
      localDay: slot.day,
    };
  }

  /**
   * Redis turns contention away first (one attempt per assignee and time, a
   * counter per day); PostgreSQL decides what gets through. A "full" from
   * Redis is believed only when PostgreSQL's count agrees.
   */
  async function guarded(workspaceId: string, d: BookingDraft, work: () => Promise<AppointmentRecord>) {
    const count = () => appointments.dayCount(d.calendarId, d.localDay);
    const hold = await guard.hold(
      workspaceId,
      d.assigneeUserId,
      d.startAt,
      d.calendarId,
      d.localDay,
      d.dailyCap,
      count,
    );
    if (hold === "taken") throw fail("slot_taken", "the assignee's time is being booked by another request");
    let booked = false;
    try {
      if (hold.full && (await count()) >= d.dailyCap)
        throw fail("daily_cap_reached", "this calendar's day is at its cap of meetings");
      const meeting = await work();
      booked = true;
      return meeting;
    } finally {
      await hold.release(booked);
    }
  }

  /** A change of one meeting under the caller's Idempotency-Key, when it sent one. */
  const changeCall = <R>(
    req: { workspaceId: string; idempotencyKey?: string },
    operation: string,
    input: unknown,
    rememberAs: R,
  ) => ({
    sql: deps.sql,
    workspaceId: req.workspaceId,
    key: req.idempotencyKey,
    operation,
    input,
    now: clock.now(),
    remember: rememberAs,
  });

  return {
    async listAppointments(req) {
      const { cursor, limit, ...given } = check(
        listAppointmentsQuery,
        plainOf(ListAppointmentsRequestSchema, req),
        "query",
      );
      const bound = { ...given, status: given.status ?? "scheduled" };
      const filters: AppointmentFilters = {
        ...bound,
        from: instant(bound.from),
        to: instant(bound.to),
        createdAfter: instant(bound.createdAfter),
        updatedAfter: instant(bound.updatedAfter),
      };
      const { rows, nextCursor } = await keysetPage<AppointmentRecord>({
        list: LIST,
        workspaceId: req.workspaceId,
        filters: bound,
        cursor,
        limit,
        defaultLimit: 100,
        sortKey: (a) => a.startAt,
        fetch: (take, after) => appointments.list(req.workspaceId, filters, take, after),
      });
      return { data: rows.map((r) => appointmentWire.proto(r)), nextCursor };
    },

    async getAppointment(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const row = await appointments.get(req.workspaceId, id);
      if (!row) throw notFound("appointment");
      return reply(row);
    },

    /**
     * Book (API.md §7). With an Idempotency-Key (API.md §9) the request is
     * checked and booked inside the key's transaction and goes straight to
     * PostgreSQL: a replay answers the remembered meeting or failure.
     */
    async createAppointment(req, ctx) {
      const plain = plainOf(AppointmentInputSchema, req.input ?? create(AppointmentInputSchema));
      const body = check(createAppointmentBody, plain, "body");
      const ws = req.workspaceId;
      const now = clock.now();
      if (req.idempotencyKey === undefined) {
        const draft = await prepare(ws, body, now);
        return reply(await guarded(ws, draft, () => appointments.book(ws, draft, now)));
      }
      const { "idempotency-key": key } = check(
        keyHeader,
        { "idempotency-key": req.idempotencyKey },
        "headers",
      );
      const result = await appointments.bookOnce(
        { workspaceId: ws, key, fingerprint: requestFingerprint("CreateAppointment", plain) },
        (tx) => prepare(ws, body, now, tx),
        now,
        (a) => appointmentWire.json(a),
      );
      if (!result.replayed) {
        await guard.forgetDays(result.value.calendarId, [result.value.localDay]);
        return reply(result.value);
      }
      ctx.responseHeader.set(REPLAYED_HEADER, "true");
      return { appointment: fromApiJson(AppointmentSchema, result.ok) };
    },

    async cancelAppointment(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const plain = plainOf(CancelAppointmentRequestSchema, req, NOT_BODY);
      const body = check(cancelAppointmentBody, plain, "body");
      const call = changeCall(req, "CancelAppointment", { id, ...plain }, remember.cancel);
      let freed: AppointmentRecord | undefined;
      const res = await idempotent(ctx, call, async (tx) => {
        const { meeting, changed } = await appointments.cancel(
          req.workspaceId,
          id,
          body.reason ?? null,
          call.now,
          tx,
        );
        if (changed) freed = meeting;
        return reply(meeting);
      });
      // Redis only once the transaction is over.
      if (freed) await guard.forgetDays(freed.calendarId, [freed.localDay]);
      return res;
    },

    async rescheduleAppointment(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const plain = plainOf(RescheduleAppointmentRequestSchema, req, NOT_BODY);
      const body = check(rescheduleAppointmentBody, plain, "body");
      const call = changeCall(req, "RescheduleAppointment", { id, ...plain }, remember.reschedule);
      const replay = await replayOf(ctx, call);
      if (replay) return replay;
      const current = await appointments.get(req.workspaceId, id);
      if (!current) throw notFound("appointment");
      mustBeScheduled(current, "reschedule");
      const calendar = (await calendars.get(req.workspaceId, current.calendarId))!;
      const assigneeUserId = body.assigneeUserId ?? current.assigneeUserId;
      checkAssignee(calendar, assigneeUserId);
      const slot = placeOnGrid(calendar, instant(body.startAt), instant(body.endAt) ?? undefined, call.now);
      const releaseTime = await guard.claimTime(req.workspaceId, assigneeUserId, slot.startAt);
      if (releaseTime === "taken")
        throw fail("slot_taken", "the assignee's time is being booked by another request");
      const move = {
        assigneeUserId,
        startAt: slot.startAt,
        endAt: slot.endAt,
        localDay: slot.day,
        dailyCap: calendar.dailyCap,
      };
      try {
        let moved = false;
        const res = await runOnce(ctx, call, async (tx) => {
          const { meeting, changed } = await appointments.reschedule(req.workspaceId, id, move, call.now, tx);
          moved = changed;
          return reply(meeting);
        });
        if (moved) await guard.forgetDays(calendar.id, [current.localDay, slot.day]);
        return res;
      } finally {
        await releaseTime();
      }
    },

    async recordOutcome(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const plain = plainOf(RecordOutcomeRequestSchema, req, NOT_BODY);
      const { outcome } = check(outcomeBody, plain, "body");
      const call = changeCall(req, "RecordOutcome", { id, ...plain }, remember.outcome);
      return idempotent(ctx, call, async (tx) =>
        reply(await appointments.recordOutcome(req.workspaceId, id, outcome, call.now, tx)),
      );
    },
  };
}
