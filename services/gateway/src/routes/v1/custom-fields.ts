import { CustomFieldSchema } from "@funil/contracts";
import { listCustomFieldsQuery } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { customField, page } from "../../schemas/responses.js";
import { sendWholeJsonList, wholeListQuery } from "./whole-list.js";

const errors = errorResponses(400, 401, 403);

export const customFieldRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/custom-fields",
      {
        config: { scopes: ["contacts.read", "opportunities.read"] },
        schema: {
          operationId: "listCustomFields",
          tags: ["custom fields"],
          summary: "List the custom-field definitions (the fieldKeys accepted in customFields)",
          querystring: listCustomFieldsQuery.extend(wholeListQuery),
          response: { 200: page(customField), ...errors },
        },
      },
      async (req, reply) => {
        const { workspaceId } = req.caller;
        const { entity, cursor, limit } = req.query;
        const res = await ctx.crm.customFields.listCustomFields({ workspaceId, entity, apiJson: true });
        return sendWholeJsonList(reply, CustomFieldSchema, res, {
          list: "custom-fields",
          workspaceId,
          filters: { entity },
          cursor,
          limit,
        });
      },
    );
  };
