import { apiJsonCall } from "@funil/rpc";
import { listInteractionsQuery } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { interaction, page } from "../../schemas/responses.js";
import { sendPage } from "./json-page.js";

const errors = errorResponses(400, 401, 403);

export const interactionRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/interactions",
      {
        config: { scopes: ["interactions.read"] },
        schema: {
          operationId: "listInteractions",
          tags: ["interactions"],
          summary: "The timeline: messages, calls, e-mails and notes (keyset: createdAt desc, id desc)",
          description:
            "createdAfter and createdBefore are both exclusive; channel is a comma-separated list. " +
            "actor=user with direction=outbound is the speed-to-lead filter. Ids are <source>:<rowId> " +
            "(msg, call, email, note). userId is the sender stamped at send time, only for actor=user; " +
            "conversationAssigneeUserId is the conversation's current owner.",
          querystring: listInteractionsQuery,
          response: { 200: page(interaction), ...errors },
        },
      },
      async (req, reply) =>
        sendPage(
          reply,
          await apiJsonCall(ctx.timeline.interactions.listInteractions, {
            workspaceId: req.caller.workspaceId,
            ...req.query,
          }),
        ),
    );
  };
