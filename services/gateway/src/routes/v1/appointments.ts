import { type Appointment, AppointmentInputSchema, AppointmentSchema } from "@funil/contracts";
import { apiJsonCall, messageOf, toApiJson } from "@funil/rpc";
import {
  cancelAppointmentBody,
  createAppointmentBody,
  idParam,
  listAppointmentsQuery,
  outcomeBody,
  rescheduleAppointmentBody,
} from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { IDEMPOTENCY_NOTE, idempotencyHeaders, withIdempotencyKey } from "../../idempotency.js";
import { errorResponses } from "../../schemas/common.js";
import { appointment, page } from "../../schemas/responses.js";
import type { RouteApp } from "../app.js";
import { sendPage } from "./json-page.js";

const read = { scopes: ["calendars.read"] };
const write = { scopes: ["calendars.write"] };
const errors = errorResponses(400, 401, 403, 404, 409, 422);

const json = (res: { appointment?: Appointment }) => toApiJson(AppointmentSchema, res.appointment!);
/** On these bodies a null means "not given". */
const given = <T>(v: T | null | undefined) => v ?? undefined;

export const appointmentRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    meetingReads(app, ctx);
    booking(app, ctx);
    meetingChanges(app, ctx);
  };

/** GET /appointments and GET /appointments/{id}. */
function meetingReads(app: RouteApp, ctx: GatewayContext) {
  app.get(
    "/appointments",
    {
      config: read,
      schema: {
        operationId: "listAppointments",
        tags: ["meetings"],
        summary: "List meetings (keyset: startAt, id)",
        description:
          "from (inclusive) and to (exclusive) cut on startAt; status scheduled (default), canceled or all; " +
          "createdAfter and updatedAfter are strictly later.",
        querystring: listAppointmentsQuery,
        response: { 200: page(appointment), ...errors },
      },
    },
    async (req, reply) =>
      sendPage(
        reply,
        await apiJsonCall(ctx.scheduling.appointments.listAppointments, {
          workspaceId: req.caller.workspaceId,
          ...req.query,
        }),
      ),
  );

  app.get(
    "/appointments/:id",
    {
      config: read,
      schema: {
        operationId: "getAppointment",
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
}

/** POST /appointments: book a meeting. */
function booking(app: RouteApp, ctx: GatewayContext) {
  app.post(
    "/appointments",
    {
      config: write,
      schema: {
        operationId: "createAppointment",
        tags: ["meetings"],
        summary: "Book a meeting on a free slot (Idempotency-Key accepted)",
        description:
          "endAt defaults to startAt + the calendar's duration. 409 slot_taken: the assignee has a scheduled " +
          "meeting overlapping [startAt, endAt) in any calendar. 422 daily_cap_reached: the calendar's local " +
          "day is at its cap. 422 invalid_slot: not a slot the calendar offers. 422 invalid_reference: unknown " +
          "calendar, contact or opportunity, or an assignee not of the calendar. recoveredFromAppointmentId " +
          `is set automatically (the contact's latest noshow not yet recovered). ${IDEMPOTENCY_NOTE}`,
        headers: idempotencyHeaders,
        body: createAppointmentBody,
        response: { 201: appointment, ...errors },
      },
    },
    async (req, reply) => {
      const res = await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
        ctx.scheduling.appointments.createAppointment(
          {
            workspaceId: req.caller.workspaceId,
            input: messageOf(AppointmentInputSchema, req.body),
            idempotencyKey,
          },
          options,
        ),
      );
      return reply.code(201).send(json(res));
    },
  );
}

/** Cancel, reschedule and record the outcome of a booked meeting, each under an Idempotency-Key. */
function meetingChanges(app: RouteApp, ctx: GatewayContext) {
  app.post(
    "/appointments/:id/cancel",
    {
      config: write,
      schema: {
        operationId: "cancelAppointment",
        tags: ["meetings"],
        summary: "Cancel a meeting: frees its time and its day's place at once",
        description: IDEMPOTENCY_NOTE,
        params: idParam,
        headers: idempotencyHeaders,
        body: cancelAppointmentBody,
        response: { 200: appointment, ...errors },
      },
    },
    async (req, reply) =>
      json(
        await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
          ctx.scheduling.appointments.cancelAppointment(
            {
              workspaceId: req.caller.workspaceId,
              id: req.params.id,
              reason: given(req.body?.reason),
              idempotencyKey,
            },
            options,
          ),
        ),
      ),
  );

  app.post(
    "/appointments/:id/reschedule",
    {
      config: write,
      schema: {
        operationId: "rescheduleAppointment",
        tags: ["meetings"],
        summary: "Move a meeting to another slot (same checks as a booking); 409 on a canceled meeting",
        description: IDEMPOTENCY_NOTE,
        params: idParam,
        headers: idempotencyHeaders,
        body: rescheduleAppointmentBody,
        response: { 200: appointment, ...errors },
      },
    },
    async (req, reply) =>
      json(
        await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
          ctx.scheduling.appointments.rescheduleAppointment(
            {
              workspaceId: req.caller.workspaceId,
              id: req.params.id,
              startAt: req.body.startAt,
              endAt: given(req.body.endAt),
              assigneeUserId: given(req.body.assigneeUserId),
              idempotencyKey,
            },
            options,
          ),
        ),
      ),
  );

  app.post(
    "/appointments/:id/outcome",
    {
      config: write,
      schema: {
        operationId: "recordAppointmentOutcome",
        tags: ["meetings"],
        summary: "Record a meeting's outcome (realizada, noshow, reagendada); 409 on a canceled meeting",
        description: IDEMPOTENCY_NOTE,
        params: idParam,
        headers: idempotencyHeaders,
        body: outcomeBody,
        response: { 200: appointment, ...errors },
      },
    },
    async (req, reply) =>
      json(
        await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
          ctx.scheduling.appointments.recordOutcome(
            {
              workspaceId: req.caller.workspaceId,
              id: req.params.id,
              outcome: req.body.outcome,
              idempotencyKey,
            },
            options,
          ),
        ),
      ),
  );
}
