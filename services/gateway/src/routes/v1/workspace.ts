import { CustomFieldSchema, MemberSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { listCustomFieldsQuery } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { customField, member, page } from "../../schemas/responses.js";

const errors = errorResponses(400, 401, 403);

export const workspaceRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/custom-fields",
      {
        config: { scopes: ["contacts.read", "opportunities.read"] },
        schema: {
          tags: ["custom fields"],
          summary: "List the custom-field definitions (the fieldKeys accepted in customFields)",
          querystring: listCustomFieldsQuery,
          response: { 200: page(customField), ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.customFields.listCustomFields({
          workspaceId: req.caller.workspaceId,
          entity: req.query.entity,
        });
        return { data: res.data.map((f) => toApiJson(CustomFieldSchema, f)), nextCursor: null };
      },
    );

    app.get(
      "/members",
      {
        config: { scopes: ["members.read"] },
        schema: {
          tags: ["members"],
          summary: "List workspace members, deactivated ones included",
          response: { 200: page(member), ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.members.listMembers({ workspaceId: req.caller.workspaceId });
        return { data: res.data.map((m) => toApiJson(MemberSchema, m)), nextCursor: null };
      },
    );
  };
