import { MemberSchema } from "@funil/contracts";
import { z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { member, page } from "../../schemas/responses.js";
import { sendWholeJsonList, wholeListQuery } from "./whole-list.js";

const errors = errorResponses(400, 401, 403);

export const memberRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/members",
      {
        config: { scopes: ["members.read"] },
        schema: {
          operationId: "listMembers",
          tags: ["members"],
          summary: "List workspace members, deactivated ones included",
          querystring: z.strictObject(wholeListQuery),
          response: { 200: page(member), ...errors },
        },
      },
      async (req, reply) => {
        const { workspaceId } = req.caller;
        const res = await ctx.crm.members.listMembers({ workspaceId, apiJson: true });
        return sendWholeJsonList(reply, MemberSchema, res, { list: "members", workspaceId, ...req.query });
      },
    );
  };
