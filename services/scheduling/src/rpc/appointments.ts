import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  AppointmentInputSchema,
  AppointmentSchema,
  type AppointmentService,
  CancelAppointmentRequestSchema,
  CancelAppointmentResponseSchema,
  ListAppointmentsRequestSchema,
  ListAppointmentsResponseSchema,
  RecordOutcomeRequestSchema,
  RecordOutcomeResponseSchema,
  RescheduleAppointmentRequestSchema,
  RescheduleAppointmentResponseSchema,
} from "@funil/contracts";
import { type FiltersOf, getById, originOf, requestFingerprint } from "@funil/db";
import { fail, notFound } from "@funil/errors";
import {
  asMessageJson,
  fromApiJson,
  idempotent,
  keyedCall,
  plainOf,
  REPLAYED_HEADER,
  type Remember,
  replayOf,
  rowList,
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
import { type BookingDeps, bookAppointment } from "../book-appointment.js";
import { type AppointmentRecord, checkAssignee, mustBeScheduled } from "../booking.js";
import { placeOnGrid } from "../slots.js";
import type { AppointmentFilters } from "../store/appointments.js";
import type { SchedulingDeps } from "./routes.js";
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

type Impl = ServiceImpl<typeof AppointmentService>;
const reply = (r: AppointmentRecord) => ({ appointment: appointmentWire.proto(r) });

export function appointmentService(deps: SchedulingDeps): Impl {
  return { ...meetingReads(deps), ...booking(deps), ...meetingChanges(deps) };
}

/** The filters a meetings cursor is bound to: the query's, the status "scheduled" unless said. */
const bind = (given: FiltersOf<typeof listAppointmentsQuery>) => ({
  ...given,
  status: given.status ?? "scheduled",
});
type Bound = ReturnType<typeof bind>;

/** GET /appointments and GET /appointments/{id}. */
function meetingReads({ appointments }: BookingDeps) {
  const statement = (workspaceId: string, bound: Bound, take: number, after: [Date, string] | undefined) => {
    const filters: AppointmentFilters = {
      ...bound,
      from: instant(bound.from),
      to: instant(bound.to),
      createdAfter: instant(bound.createdAfter),
      updatedAfter: instant(bound.updatedAfter),
    };
    return appointments.list(workspaceId, filters, take, after);
  };
  // Pages are written from the statement's raw rows (packages/rpc row-pages.ts); the object path stays for the rest.
  const list = rowList({
    list: LIST,
    query: listAppointmentsQuery,
    defaultLimit: 100,
    bind,
    sortKey: (a: AppointmentRecord) => a.startAt,
    sortColumn: () => "startAt",
    response: ListAppointmentsResponseSchema,
    statement,
    toMessage: (r) => appointmentWire.proto(r),
  });
  return {
    listAppointments: (req) => list(req.workspaceId, plainOf(ListAppointmentsRequestSchema, req)),
    getAppointment: getById("appointment", appointments.get, reply),
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
      const booking = await book(req.workspaceId, body, originOf(ctx.requestHeader), key);
      if (!booking.replayed) return reply(booking.meeting);
      ctx.responseHeader.set(REPLAYED_HEADER, "true");
      return { appointment: fromApiJson(AppointmentSchema, booking.remembered) };
    },
  } satisfies Pick<Impl, "createAppointment">;
}

/**
 * Changes to a booked meeting: cancel, reschedule, outcome, each at most once per Idempotency-Key
 * (docs/api/conventions.md §Idempotency-Key) when the caller sent one; Redis only outside the key's
 * transaction.
 */
function meetingChanges(deps: SchedulingDeps) {
  const { appointments, calendars, guard, clock } = deps;
  /** A change of one meeting under the caller's Idempotency-Key, when it sent one. */
  const changeCall = <R>(
    req: { workspaceId: string; idempotencyKey?: string },
    operation: string,
    input: unknown,
    remember: Remember<R>,
  ) => keyedCall(deps.sql, req, operation, input, clock.now(), remember);
  return {
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
          originOf(ctx.requestHeader),
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
          const by = originOf(ctx.requestHeader);
          const { meeting, changed } = await appointments.reschedule(
            req.workspaceId,
            id,
            move,
            call.now,
            by,
            tx,
          );
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
        reply(
          await appointments.recordOutcome(
            req.workspaceId,
            id,
            outcome,
            call.now,
            originOf(ctx.requestHeader),
            tx,
          ),
        ),
      );
    },
  } satisfies Pick<Impl, "cancelAppointment" | "rescheduleAppointment" | "recordOutcome">;
}
