import { LearnerDetailSchema } from "@funil/contracts";
import { apiJsonCall, toApiJson } from "@funil/rpc";
import { idParam, learnerQuery, listLearnersQuery } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";
import { learner, learnerDetail, page } from "../../schemas/responses.js";
import { sendPage } from "./json-page.js";

// platform.read AND an operator workspace, else 403 forbidden_platform (docs/api/learners.md (operator workspace and platform.read)).
const platform = { platform: true };
const errors = errorResponses(400, 401, 403, 404);

/** Learner usage (docs/api/learners.md §GET /platform/users): global platform data, never filtered by the caller's workspace. */
export const platformUserRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/platform/users",
      {
        config: platform,
        schema: {
          operationId: "listPlatformUsers",
          tags: ["learners"],
          summary: "List learners (users with at least one enrollment)",
          description:
            "q matches name or e-mail (contains, case- and accent-insensitive); activeSince is lastActiveAt " +
            ">= value, activeBefore lastActiveAt < value, and a learner who never logged in matches neither. " +
            "Ordered by (createdAt, id). The counters are all-time. Only keys of the operator workspace " +
            "with platform.read; any other key gets 403 forbidden_platform.",
          querystring: listLearnersQuery,
          response: { 200: page(learner), ...errors },
        },
      },
      async (req, reply) => sendPage(reply, await apiJsonCall(ctx.learning.learners.listLearners, req.query)),
    );

    app.get(
      "/platform/users/:id",
      {
        config: platform,
        schema: {
          operationId: "getPlatformUser",
          tags: ["learners"],
          summary: "One learner's usage",
          description:
            "days (1..365, default 30) sets windowDays, the window of access.sessionsInWindow, lessons[] and " +
            "library[] (items whose lastDate >= now - days); access.lastLoginAt/lastActiveAt, courses[] and " +
            "certificates[] are all-time. 404 for an unknown user or a user without enrollment.",
          params: idParam,
          querystring: learnerQuery,
          response: { 200: learnerDetail, ...errors },
        },
      },
      async (req) => {
        const res = await ctx.learning.learners.getLearner({ id: req.params.id, days: req.query.days });
        return toApiJson(LearnerDetailSchema, res.learner!);
      },
    );
  };
