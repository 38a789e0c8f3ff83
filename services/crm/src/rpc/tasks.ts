import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  CreateTaskResponseSchema,
  ListTasksResponseSchema,
  type TaskFields,
  TaskFieldsSchema,
  type TaskService,
} from "@funil/contracts";
import { originOf, type Sql } from "@funil/db";
import { asMessageJson, idempotent, keyedCall, plainOf, rowList } from "@funil/rpc";
import {
  check,
  createTaskBody,
  idParam,
  instant,
  listTasksQuery,
  patchTaskBody,
  type z,
} from "@funil/schemas";
import type { TaskStore } from "../store/tasks.js";
import type { TaskChanges, TaskRecord } from "../tasks.js";
import { taskWire } from "./wire.js";

const LIST = "tasks";
const rememberCreated = asMessageJson(CreateTaskResponseSchema);

function changesOf(body: z.output<typeof patchTaskBody>): TaskChanges {
  const { title, dueAt, ...rest } = body;
  const changes: TaskChanges = rest;
  if (title !== undefined) changes.title = title.trim();
  if (dueAt !== undefined) changes.dueAt = instant(dueAt);
  return changes;
}

export function taskService(deps: {
  sql: Sql;
  tasks: TaskStore;
  clock: Clock;
}): ServiceImpl<typeof TaskService> {
  const { tasks, clock } = deps;
  const fieldsOf = (fields: TaskFields | undefined) =>
    plainOf(TaskFieldsSchema, fields ?? create(TaskFieldsSchema));
  const reply = (t: TaskRecord) => ({ task: taskWire.proto(t) });
  // Pages are written from the statement's raw rows (row-pages.ts); the object path stays for the rest.
  const list = rowList({
    list: LIST,
    query: listTasksQuery,
    defaultLimit: 50,
    bind: (bound) => ({
      assigneeUserId: bound.assigneeUserId,
      open: bound.open === undefined ? undefined : bound.open === "true",
    }),
    sortKey: (t: TaskRecord) => t.createdAt,
    sortColumn: () => "createdAt",
    response: ListTasksResponseSchema,
    statement: (workspaceId, filters, take, after) => tasks.listQuery(workspaceId, filters, take, after),
    toMessage: (t) => taskWire.proto(t),
  });

  return {
    listTasks: (req) =>
      list(req.workspaceId, {
        assigneeUserId: req.assigneeUserId,
        open: req.open === undefined ? undefined : String(req.open),
        cursor: req.cursor,
        limit: req.limit || undefined,
      }),

    async createTask(req, ctx) {
      const plain = fieldsOf(req.fields);
      const changes = changesOf(check(createTaskBody, plain, "body"));
      const call = keyedCall(deps.sql, req, "CreateTask", plain, clock.now(), rememberCreated);
      return idempotent(ctx, call, async (tx) =>
        reply(
          await tasks.create(
            req.workspaceId,
            { ...changes, title: changes.title! },
            call.now,
            originOf(ctx.requestHeader),
            tx,
          ),
        ),
      );
    },

    async updateTask(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const changes = changesOf(check(patchTaskBody, fieldsOf(req.fields), "body"));
      return reply(
        await tasks.update(req.workspaceId, id, changes, clock.now(), originOf(ctx.requestHeader)),
      );
    },
  };
}
