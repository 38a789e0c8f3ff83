import { AuditEntrySchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { listAuditQuery, type z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { auditEntry, page } from "../../schemas/responses.js";
import { sendJsonPage } from "./json-page.js";

export const auditRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/audit",
      {
        config: { scopes: ["audit.read"] },
        schema: {
          operationId: "listAuditEntries",
          tags: ["audit"],
          summary: "Who changed what: the workspace's changes, oldest first, with their actor and request id",
          description:
            "Each entry names the change's actor (the API key's id, admin, or system), the x-request-id the " +
            "gateway answered the request that made it, and the names (never the values) of the fields it set " +
            "or changed. entity restricts the list to one kind of entity, id (with entity) to one of them; " +
            "after (ISO-8601) to changes that occurred after that instant. Kept EVENT_LOG_RETENTION_DAYS.",
          querystring: listAuditQuery,
          response: { 200: page(auditEntry), ...errorResponses(400, 401, 403) },
        },
      },
      async (req, reply) => {
        const res = await ctx.webhooks.webhooks.listAuditEntries({
          workspaceId: req.caller.workspaceId,
          ...req.query,
          apiJson: true,
        });
        if (res.dataJson.length > 0) return sendJsonPage(reply, res.dataJson, res.nextCursor);
        // A webhooks copy of the version before api_json (during a roll) answers messages.
        return {
          data: res.data.map((e) => toApiJson(AuditEntrySchema, e) as z.output<typeof auditEntry>),
          nextCursor: res.nextCursor ?? null,
        };
      },
    );
  };
