import { DomainEventSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { listEventsQuery, WEBHOOK_EVENTS, type z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { domainEvent } from "../../events/catalog.js";
import { errorResponses } from "../../schemas/common.js";
import { page } from "../../schemas/responses.js";
import { sendJsonPage } from "./json-page.js";

// Any read scope of a subscribable event opens the route; which events it lists is the webhooks service's
// rule (the types of the key's read scopes), over HTTP and gRPC alike.
const config = { scopes: [...new Set(Object.values(WEBHOOK_EVENTS))] };

export const eventRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/events",
      {
        config,
        schema: {
          operationId: "listEvents",
          tags: ["events"],
          summary:
            "Catch up on the workspace's events, in the order they were emitted, after the last one processed",
          description:
            "Each item is the body a webhook delivery of its type carries. after is the id of the last event " +
            "processed (404 when the log does not hold it: unknown, another workspace's, or older than " +
            "EVENT_LOG_RETENTION_DAYS); type is one event type or a comma-separated list. Only the event types " +
            "of the key's read scopes are listed; asking for another type is 403 missing_scope.",
          querystring: listEventsQuery,
          response: { 200: page(domainEvent), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (req, reply) => {
        const res = await ctx.webhooks.webhooks.listEvents({
          workspaceId: req.caller.workspaceId,
          scopes: [...req.caller.scopes],
          ...req.query,
          apiJson: true,
        });
        if (res.dataJson.length > 0) return sendJsonPage(reply, res.dataJson, res.nextCursor);
        // A copy of the service that does not know api_json yet (during a rolling update) sends messages.
        return {
          // The log holds subscribable events only, so `type` is one of domainEvent's.
          data: res.data.map((e) => toApiJson(DomainEventSchema, e) as z.output<typeof domainEvent>),
          nextCursor: res.nextCursor ?? null,
        };
      },
    );
  };
