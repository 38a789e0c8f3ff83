import { CalendarSchema, SlotSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { idParam, slotsQuery } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { calendar, page, slot } from "../../schemas/responses.js";

const read = { scopes: ["calendars.read"] };

export const calendarRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/calendars",
      {
        config: read,
        schema: {
          tags: ["meetings"],
          summary: "List calendars (created through the admin API); appointments filter on their key",
          response: { 200: page(calendar), ...errorResponses(401, 403) },
        },
      },
      async (req) => {
        const res = await ctx.scheduling.calendars.listCalendars({ workspaceId: req.caller.workspaceId });
        return { data: res.data.map((c) => toApiJson(CalendarSchema, c)), nextCursor: null };
      },
    );

    app.get(
      "/calendars/:id/slots",
      {
        config: read,
        schema: {
          tags: ["meetings"],
          summary: "Free slots of a calendar, each with the assignee round-robin picks",
          description:
            "Times on the calendar's grid inside its weekly availability, in its timezone (a local time the " +
            "clocks skip on a DST change day is not offered; one they show twice is offered once), in the " +
            "future, on days under the cap, where the assignee has no meeting in any calendar. The assignee " +
            "is the free one with the fewest meetings of this calendar that day, ties by assigneeUserIds " +
            "order. Default range now .. now + 7 days; at most 31 days.",
          params: idParam,
          querystring: slotsQuery,
          response: { 200: page(slot), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (req) => {
        const res = await ctx.scheduling.calendars.listSlots({
          workspaceId: req.caller.workspaceId,
          id: req.params.id,
          ...req.query,
        });
        return { data: res.data.map((s) => toApiJson(SlotSchema, s)), nextCursor: null };
      },
    );
  };
