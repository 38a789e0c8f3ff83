import { PipelineSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { page, pipeline } from "../../schemas/responses.js";

const errors = errorResponses(401, 403);

export const pipelineRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/pipelines",
      {
        config: { scopes: ["opportunities.read"] },
        schema: {
          tags: ["opportunities"],
          summary: "List pipelines with their stages in order (every stage is an open stage)",
          response: { 200: page(pipeline), ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.pipelines.listPipelines({ workspaceId: req.caller.workspaceId });
        return { data: res.data.map((p) => toApiJson(PipelineSchema, p)), nextCursor: null };
      },
    );
  };
