import { PipelineSchema } from "@funil/contracts";
import { z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { page, pipeline } from "../../schemas/responses.js";
import { sendWholeJsonList, wholeListQuery } from "./whole-list.js";

const errors = errorResponses(400, 401, 403);

export const pipelineRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/pipelines",
      {
        config: { scopes: ["opportunities.read"] },
        schema: {
          operationId: "listPipelines",
          tags: ["opportunities"],
          summary: "List pipelines with their stages in order (every stage is an open stage)",
          querystring: z.strictObject(wholeListQuery),
          response: { 200: page(pipeline), ...errors },
        },
      },
      async (req, reply) => {
        const { workspaceId } = req.caller;
        const res = await ctx.crm.pipelines.listPipelines({ workspaceId, apiJson: true });
        return sendWholeJsonList(reply, PipelineSchema, res, {
          list: "pipelines",
          workspaceId,
          ...req.query,
        });
      },
    );
  };
