import { type Task, TaskFieldsSchema, TaskSchema } from "@funil/contracts";
import { apiJsonCall, messageOf, toApiJson } from "@funil/rpc";
import { createTaskBody, idParam, listTasksQuery, patchTaskBody } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import {
  IDEMPOTENCY_NOTE,
  idempotencyErrors,
  idempotencyHeaders,
  withIdempotencyKey,
} from "../../idempotency.js";
import { writeOptions } from "../../origin.js";
import { errorResponses } from "../../schemas/common.js";
import { page, task } from "../../schemas/responses.js";
import { sendPage } from "./json-page.js";

const errors = errorResponses(400, 401, 403, 404, 422);

const json = (res: { task?: Task }) => toApiJson(TaskSchema, res.task!);

export const taskRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/tasks",
      {
        config: { scopes: ["tasks.read"] },
        schema: {
          operationId: "listTasks",
          tags: ["tasks"],
          summary: "List tasks (keyset: createdAt, id); open=true: not completed, open=false: completed",
          querystring: listTasksQuery,
          response: { 200: page(task), ...errors },
        },
      },
      async (req, reply) => {
        const { open, ...rest } = req.query;
        const page = await apiJsonCall(ctx.crm.tasks.listTasks, {
          workspaceId: req.caller.workspaceId,
          ...rest,
          open: open === undefined ? undefined : open === "true",
        });
        return sendPage(reply, page);
      },
    );

    app.post(
      "/tasks",
      {
        config: { scopes: ["tasks.write"] },
        schema: {
          operationId: "createTask",
          tags: ["tasks"],
          summary: "Create a task (a task about a deal defaults to the deal's contact)",
          description: IDEMPOTENCY_NOTE,
          headers: idempotencyHeaders,
          body: createTaskBody,
          response: { 201: task, ...errors, ...idempotencyErrors },
        },
      },
      async (req, reply) => {
        const res = await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
          ctx.crm.tasks.createTask(
            {
              workspaceId: req.caller.workspaceId,
              fields: messageOf(TaskFieldsSchema, req.body),
              idempotencyKey,
            },
            options,
          ),
        );
        return reply.code(201).send(json(res));
      },
    );

    app.patch(
      "/tasks/:id",
      {
        config: { scopes: ["tasks.write"] },
        schema: {
          operationId: "updateTask",
          tags: ["tasks"],
          summary: "Update a task: completed true sets completedAt, false clears it; null clears a field",
          params: idParam,
          body: patchTaskBody,
          response: { 200: task, ...errors },
        },
      },
      async (req) =>
        json(
          await ctx.crm.tasks.updateTask(
            {
              workspaceId: req.caller.workspaceId,
              id: req.params.id,
              fields: messageOf(TaskFieldsSchema, req.body),
            },
            writeOptions(req),
          ),
        ),
    );
  };
