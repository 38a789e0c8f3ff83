import { FunnelSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { funnelQuery } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { funnel } from "../../schemas/responses.js";

const errors = errorResponses(400, 401, 403, 422);

export const funnelRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/funnel",
      {
        config: { scopes: ["opportunities.read"] },
        schema: {
          operationId: "getFunnel",
          tags: ["opportunities"],
          summary: "Funnel summary: count and valueCents per stage and per status",
          description:
            "total, byStage and byStatus count the deals created in [from, to); closedInRange counts the " +
            "deals won or lost inside the range whenever they were created. No from/to: everything. " +
            "Trashed deals are left out. byStage lists every stage in order, zero rows included; without " +
            "pipelineId, the stages of every pipeline in pipeline order.",
          querystring: funnelQuery,
          response: { 200: funnel, ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.funnel.getFunnel({ workspaceId: req.caller.workspaceId, ...req.query });
        return toApiJson(FunnelSchema, res.funnel!);
      },
    );
  };
