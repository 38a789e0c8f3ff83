import { CalendarSchema, SlotSchema } from "@funil/contracts";
import { decodeCursor, encodeCursor, toApiJson } from "@funil/rpc";
import { idParam, slotsQuery, z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { calendar, page, slot } from "../../schemas/responses.js";
import { sendWholeJsonList, wholeListQuery } from "./whole-list.js";

const read = { scopes: ["calendars.read"] };

export const calendarRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/calendars",
      {
        config: read,
        schema: {
          operationId: "listCalendars",
          tags: ["meetings"],
          summary: "List calendars (created through the admin API); appointments filter on their key",
          querystring: z.strictObject(wholeListQuery),
          response: { 200: page(calendar), ...errorResponses(400, 401, 403) },
        },
      },
      async (req, reply) => {
        const { workspaceId } = req.caller;
        const res = await ctx.scheduling.calendars.listCalendars({ workspaceId, apiJson: true });
        return sendWholeJsonList(reply, CalendarSchema, res, {
          list: "calendars",
          workspaceId,
          ...req.query,
        });
      },
    );

    app.get(
      "/calendars/:id/slots",
      {
        config: read,
        schema: {
          operationId: "listCalendarSlots",
          tags: ["meetings"],
          summary: "Free slots of a calendar, each with the assignee round-robin picks",
          description:
            "Times on the calendar's grid inside its weekly availability, in its timezone (a local time the " +
            "clocks skip on a DST change day is not offered; one they show twice is offered once), in the " +
            "future, on days under the cap, where the assignee has no meeting in any calendar. The assignee " +
            "is the free one with the fewest meetings of this calendar that day, ties by assigneeUserIds " +
            "order. Default range now .. now + 7 days; at most 31 days.",
          params: idParam,
          querystring: slotsQuery.extend(wholeListQuery),
          response: { 200: page(slot), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (req) => {
        const { workspaceId } = req.caller;
        const { cursor, limit, ...range } = req.query;
        // Paged like a whole list (whole-list.ts), by the service: a month of slots is thousands, and only
        // the page crosses the hop. Bound to the range as asked: without from/to the window moves, so the
        // slot's time is the key.
        const bound = { id: req.params.id, ...range, workspaceId };
        const [afterIndex, afterStartAt] = cursor
          ? decodeCursor(cursor, "slots", bound, ["number", "string"])
          : [undefined, undefined];
        const res = await ctx.scheduling.calendars.listSlots({
          workspaceId,
          id: req.params.id,
          ...range,
          limit,
          afterStartAt: afterStartAt as string | undefined,
          afterIndex: afterIndex === undefined ? undefined : Math.trunc(afterIndex as number),
        });
        const last = res.data.at(-1);
        return {
          data: res.data.map((s) => toApiJson(SlotSchema, s)),
          nextCursor:
            res.more && last
              ? encodeCursor("slots", bound, [res.start + res.data.length - 1, last.startAt])
              : null,
        };
      },
    );
  };
