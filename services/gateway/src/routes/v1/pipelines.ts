import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { pipelineList } from "../../schemas/pipelines.js";

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
          response: { 200: pipelineList, ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.pipelines.listPipelines({ workspaceId: req.caller.workspaceId });
        return {
          data: res.data.map((p) => ({
            id: p.id,
            name: p.name,
            stages: p.stages.map((s) => ({ id: s.id, name: s.name, position: s.position })),
          })),
          nextCursor: null,
        };
      },
    );
  };
