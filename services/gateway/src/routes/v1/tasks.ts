import { type Task, TaskFieldsSchema, TaskSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { z } from "zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses, idParam } from "../../schemas/common.js";
import { createTaskBody, listTasksQuery, patchTaskBody, task, taskList } from "../../schemas/tasks.js";
import { setClearFields } from "./fields.js";

const errors = errorResponses(400, 401, 403, 404, 422);

const taskJson = (t: Task | undefined) => toApiJson(TaskSchema, t!) as z.infer<typeof task>;

/** A body as the proto's set / clear / absent triple (null clears on PATCH, means "not given" on create). */
function toFields(body: z.infer<typeof patchTaskBody>, opts: { create: boolean }) {
  const fields = setClearFields(TaskFieldsSchema, body);
  if (opts.create) fields.clear = [];
  return fields;
}

export const taskRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/tasks",
      {
        config: { scopes: ["tasks.read"] },
        schema: {
          tags: ["tasks"],
          summary: "List tasks (keyset: createdAt, id); open=true: not completed, open=false: completed",
          querystring: listTasksQuery,
          response: { 200: taskList, ...errors },
        },
      },
      async (req) => {
        const { open, ...rest } = req.query;
        const res = await ctx.crm.tasks.listTasks({
          workspaceId: req.caller.workspaceId,
          ...rest,
          open: open === undefined ? undefined : open === "true",
        });
        return { data: res.data.map(taskJson), nextCursor: res.nextCursor ?? null };
      },
    );

    app.post(
      "/tasks",
      {
        config: { scopes: ["tasks.write"] },
        schema: {
          tags: ["tasks"],
          summary: "Create a task (a task about a deal defaults to the deal's contact)",
          body: createTaskBody,
          response: { 201: task, ...errors },
        },
      },
      async (req, reply) => {
        const res = await ctx.crm.tasks.createTask({
          workspaceId: req.caller.workspaceId,
          fields: toFields(req.body, { create: true }),
        });
        return reply.code(201).send(taskJson(res.task));
      },
    );

    app.patch(
      "/tasks/:id",
      {
        config: { scopes: ["tasks.write"] },
        schema: {
          tags: ["tasks"],
          summary: "Update a task: completed true sets completedAt, false clears it; null clears a field",
          params: idParam,
          body: patchTaskBody,
          response: { 200: task, ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.tasks.updateTask({
          workspaceId: req.caller.workspaceId,
          id: req.params.id,
          fields: toFields(req.body, { create: false }),
        });
        return taskJson(res.task);
      },
    );
  };
