import { CalendarSchema, CustomFieldSchema, PipelineSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { createCalendarBody, createCustomFieldBody, createPipelineBody } from "@funil/schemas";
import type { GatewayContext } from "../../context.js";
import { writeOptions } from "../../origin.js";
import { calendar, customField, pipeline } from "../../schemas/responses.js";
import { type AdminApp, errors, mustWorkspace, wsParam } from "./common.js";

/**
 * What a workspace is set up with before its clients write: custom fields and pipelines (crm) and
 * calendars (scheduling), each created by the service that owns it.
 */
export function definitionRoutes(app: AdminApp, ctx: GatewayContext) {
  app.post(
    "/workspaces/:ws/custom-fields",
    {
      schema: {
        tags: ["admin"],
        summary: "Define a custom field of contacts or deals",
        params: wsParam,
        body: createCustomFieldBody,
        response: { 201: customField, ...errors },
      },
    },
    async (req, reply) => {
      await mustWorkspace(ctx, req.params.ws);
      const res = await ctx.crm.customFields.createCustomField(
        {
          workspaceId: req.params.ws,
          ...req.body,
          options: req.body.options ?? [],
        },
        writeOptions(req),
      );
      return reply.code(201).send(toApiJson(CustomFieldSchema, res.customField!));
    },
  );

  app.post(
    "/workspaces/:ws/pipelines",
    {
      schema: {
        tags: ["admin"],
        summary: "Create a pipeline; stages keep the order given (every stage is an open stage)",
        params: wsParam,
        body: createPipelineBody,
        response: { 201: pipeline, ...errors },
      },
    },
    async (req, reply) => {
      await mustWorkspace(ctx, req.params.ws);
      const res = await ctx.crm.pipelines.createPipeline(
        {
          workspaceId: req.params.ws,
          name: req.body.name,
          stageNames: req.body.stages.map((s) => s.name),
        },
        writeOptions(req),
      );
      return reply.code(201).send(toApiJson(PipelineSchema, res.pipeline!));
    },
  );

  app.post(
    "/workspaces/:ws/calendars",
    {
      schema: {
        tags: ["admin"],
        summary: "Create a calendar; its assignees must be active members of the workspace",
        description:
          "availability is weekly windows in the calendar's local time (weekday 0 = Sunday); " +
          "slotIntervalMin defaults to durationMin; timezone is an IANA zone (unknown → 400).",
        params: wsParam,
        body: createCalendarBody,
        response: { 201: calendar, ...errors },
      },
    },
    async (req, reply) => {
      await mustWorkspace(ctx, req.params.ws);
      const res = await ctx.scheduling.calendars.createCalendar(
        {
          workspaceId: req.params.ws,
          ...req.body,
        },
        writeOptions(req),
      );
      return reply.code(201).send(toApiJson(CalendarSchema, res.calendar!));
    },
  );
}
