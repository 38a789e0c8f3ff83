import { type Appointment, AppointmentInputSchema, AppointmentSchema } from "@funil/contracts";
import { messageOf, REPLAYED_HEADER, toApiJson } from "@funil/rpc";
import {
  cancelAppointmentBody,
  createAppointmentBody,
  idempotencyKey,
  idParam,
  listAppointmentsQuery,
  outcomeBody,
  rescheduleAppointmentBody,
  z,
} from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { appointment, page } from "../../schemas/responses.js";

const read = { scopes: ["calendars.read"] };
const write = { scopes: ["calendars.write"] };
const errors = errorResponses(400, 401, 403, 404, 409, 422);

const json = (res: { appointment?: Appointment }) => toApiJson(AppointmentSchema, res.appointment!);
/** On these bodies a null means "not given". */
const given = <T>(v: T | null | undefined) => v ?? undefined;

export const appointmentRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/appointments",
      {
        config: read,
        schema: {
          tags: ["meetings"],
          summary: "List meetings (keyset: startAt, id)",
          description:
            "from (inclusive) and to (exclusive) cut on startAt; status scheduled (default), canceled or all; " +
            "createdAfter and updatedAfter are strictly later.",
          querystring: listAppointmentsQuery,
          response: { 200: page(appointment), ...errors },
        },
      },
      async (req) => {
        const res = await ctx.scheduling.appointments.listAppointments({
          workspaceId: req.caller.workspaceId,
          ...req.query,
        });
        return {
          data: res.data.map((a) => toApiJson(AppointmentSchema, a)),
          nextCursor: res.nextCursor ?? null,
        };
      },
    );

    app.get(
      "/appointments/:id",
      {
        config: read,
        schema: {
          tags: ["meetings"],
          summary: "Read one meeting",
          params: idParam,
          response: { 200: appointment, ...errors },
        },
      },
      async (req) =>
        json(
          await ctx.scheduling.appointments.getAppointment({
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
          }),
        ),
    );

    app.post(
      "/appointments",
      {
        config: write,
        schema: {
          tags: ["meetings"],
          summary: "Book a meeting on a free slot (Idempotency-Key accepted)",
          description:
            "endAt defaults to startAt + the calendar's duration. 409 slot_taken: the assignee has a scheduled " +
            "meeting overlapping [startAt, endAt) in any calendar. 422 daily_cap_reached: the calendar's local " +
            "day is at its cap. 422 invalid_slot: not a slot the calendar offers. 422 invalid_reference: unknown " +
            "calendar, contact or opportunity, or an assignee not of the calendar. recoveredFromAppointmentId " +
            "is set automatically (the contact's latest noshow not yet recovered).",
          headers: z.object({ "idempotency-key": idempotencyKey.optional() }),
          body: createAppointmentBody,
          response: { 201: appointment, ...errors },
        },
      },
      async (req, reply) => {
        let replayed = false;
        const res = await ctx.scheduling.appointments.createAppointment(
          {
            workspaceId: req.caller.workspaceId,
            input: messageOf(AppointmentInputSchema, req.body),
            idempotencyKey: req.headers["idempotency-key"],
          },
          { onHeader: (headers) => (replayed = headers.get(REPLAYED_HEADER) === "true") },
        );
        if (replayed) reply.header("idempotent-replayed", "true");
        return reply.code(201).send(json(res));
      },
    );

    app.post(
      "/appointments/:id/cancel",
      {
        config: write,
        schema: {
          tags: ["meetings"],
          summary: "Cancel a meeting: frees its time and its day's place at once",
          params: idParam,
          body: cancelAppointmentBody,
          response: { 200: appointment, ...errors },
        },
      },
      async (req) =>
        json(
          await ctx.scheduling.appointments.cancelAppointment({
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            reason: given(req.body?.reason),
          }),
        ),
    );

    app.post(
      "/appointments/:id/reschedule",
      {
        config: write,
        schema: {
          tags: ["meetings"],
          summary: "Move a meeting to another slot (same checks as a booking); 409 on a canceled meeting",
          params: idParam,
          body: rescheduleAppointmentBody,
          response: { 200: appointment, ...errors },
        },
      },
      async (req) =>
        json(
          await ctx.scheduling.appointments.rescheduleAppointment({
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            startAt: req.body.startAt,
            endAt: given(req.body.endAt),
            assigneeUserId: given(req.body.assigneeUserId),
          }),
        ),
    );

    app.post(
      "/appointments/:id/outcome",
      {
        config: write,
        schema: {
          tags: ["meetings"],
          summary: "Record a meeting's outcome (realizada, noshow, reagendada); 409 on a canceled meeting",
          params: idParam,
          body: outcomeBody,
          response: { 200: appointment, ...errors },
        },
      },
      async (req) =>
        json(
          await ctx.scheduling.appointments.recordOutcome({
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            outcome: req.body.outcome,
          }),
        ),
    );
  };
