import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  AppointmentInputSchema,
  AppointmentSchema,
  type AppointmentService,
  CancelAppointmentRequestSchema,
  ListAppointmentsRequestSchema,
  RecordOutcomeRequestSchema,
  RescheduleAppointmentRequestSchema,
} from "@funil/contracts";
import { requestFingerprint } from "@funil/db";
import { fail, notFound } from "@funil/errors";
import { fromApiJson, keysetPage, plainOf, REPLAYED_HEADER } from "@funil/rpc";
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
import { type BookingDeps, bookAppointment } from "../book-appointment.js";
import { type AppointmentRecord, checkAssignee, mustBeScheduled } from "../booking.js";
import { placeOnGrid } from "../slots.js";
import type { AppointmentFilters } from "../store/appointments.js";
import { appointmentWire } from "./wire.js";

const LIST = "appointments";
const keyHeader = z.object({ "idempotency-key": idempotencyKey });

type Impl = ServiceImpl<typeof AppointmentService>;
const reply = (r: AppointmentRecord) => ({ appointment: appointmentWire.proto(r) });

export function appointmentService(deps: BookingDeps): Impl {
  return { ...meetingReads(deps), ...booking(deps), ...meetingChanges(deps) };
}

/** GET /appointments and GET /appointments/{id}. */
function meetingReads({ appointments }: BookingDeps) {
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
  } satisfies Pick<Impl, "listAppointments" | "getAppointment">;
}

/** POST /appointments: the booking use case (book-appointment.ts) behind the request's checks. */
function booking(deps: BookingDeps) {
  const book = bookAppointment(deps);
  return {
    /** Book (docs/api/meetings.md §POST /appointments), under an Idempotency-Key when one is given. */
    async createAppointment(req, ctx) {
      const plain = plainOf(AppointmentInputSchema, req.input ?? create(AppointmentInputSchema));
      const body = check(createAppointmentBody, plain, "body");
      const key =
        req.idempotencyKey === undefined
          ? undefined
          : {
              workspaceId: req.workspaceId,
              key: check(keyHeader, { "idempotency-key": req.idempotencyKey }, "headers")["idempotency-key"],
              fingerprint: requestFingerprint("CreateAppointment", plain),
            };
      const booking = await book(req.workspaceId, body, key);
      if (!booking.replayed) return reply(booking.meeting);
      ctx.responseHeader.set(REPLAYED_HEADER, "true");
      return { appointment: fromApiJson(AppointmentSchema, booking.remembered) };
    },
  } satisfies Pick<Impl, "createAppointment">;
}

/** Changes to a booked meeting: cancel, reschedule, outcome. */
function meetingChanges(deps: BookingDeps) {
  const { appointments, calendars, guard, clock } = deps;
  return {
    async cancelAppointment(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const body = check(
        cancelAppointmentBody,
        plainOf(CancelAppointmentRequestSchema, req, ["workspaceId", "id"]),
        "body",
      );
      const { meeting, changed } = await appointments.cancel(
        req.workspaceId,
        id,
        body.reason ?? null,
        clock.now(),
      );
      if (changed) await guard.forgetDays(meeting.calendarId, [meeting.localDay]);
      return reply(meeting);
    },

    async rescheduleAppointment(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const body = check(
        rescheduleAppointmentBody,
        plainOf(RescheduleAppointmentRequestSchema, req, ["workspaceId", "id"]),
        "body",
      );
      const current = await appointments.get(req.workspaceId, id);
      if (!current) throw notFound("appointment");
      mustBeScheduled(current, "reschedule");
      const calendar = (await calendars.get(req.workspaceId, current.calendarId))!;
      const assigneeUserId = body.assigneeUserId ?? current.assigneeUserId;
      checkAssignee(calendar, assigneeUserId);
      const slot = placeOnGrid(
        calendar,
        instant(body.startAt),
        instant(body.endAt) ?? undefined,
        clock.now(),
      );
      const releaseTime = await guard.claimTime(req.workspaceId, assigneeUserId, slot.startAt);
      if (releaseTime === "taken")
        throw fail("slot_taken", "the assignee's time is being booked by another request");
      try {
        const { meeting, changed } = await appointments.reschedule(
          req.workspaceId,
          id,
          {
            assigneeUserId,
            startAt: slot.startAt,
            endAt: slot.endAt,
            localDay: slot.day,
            dailyCap: calendar.dailyCap,
          },
          clock.now(),
        );
        if (changed) await guard.forgetDays(calendar.id, [current.localDay, slot.day]);
        return reply(meeting);
      } finally {
        await releaseTime();
      }
    },

    async recordOutcome(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const { outcome } = check(
        outcomeBody,
        plainOf(RecordOutcomeRequestSchema, req, ["workspaceId", "id"]),
        "body",
      );
      return reply(await appointments.recordOutcome(req.workspaceId, id, outcome, clock.now()));
    },
  } satisfies Pick<Impl, "cancelAppointment" | "rescheduleAppointment" | "recordOutcome">;
}
