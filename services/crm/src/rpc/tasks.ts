import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  type Note,
  NoteSchema,
  type NoteService,
  type Task,
  type TaskFields,
  TaskSchema,
  type TaskService,
} from "@funil/contracts";
import { type ErrorDetail, invalid, keysetPage, parseTimestamp, toApiJson } from "@funil/rpc";
import type { NoteRecord, NoteStore } from "../store/notes.js";
import type { TaskStore } from "../store/tasks.js";
import type { TaskChanges, TaskRecord } from "../tasks.js";

const orNull = <T>(v: T | null | undefined) => (v === null ? undefined : v);

export function taskToProto(t: TaskRecord): Task {
  return create(TaskSchema, {
    id: t.id,
    contactId: orNull(t.contactId),
    opportunityId: orNull(t.opportunityId),
    title: t.title,
    body: orNull(t.body),
    assigneeUserId: orNull(t.assigneeUserId),
    dueAt: t.dueAt?.toISOString(),
    completedAt: t.completedAt?.toISOString(),
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  });
}
export const taskJson = (t: TaskRecord) => toApiJson(TaskSchema, taskToProto(t));

export function noteToProto(n: NoteRecord): Note {
  return create(NoteSchema, {
    id: n.id,
    contactId: n.contactId,
    opportunityId: orNull(n.opportunityId),
    body: n.body,
    userId: n.userId,
    createdAt: n.createdAt.toISOString(),
  });
}
export const noteJson = (n: NoteRecord) => toApiJson(NoteSchema, noteToProto(n));

const CLEARABLE = new Set(["body", "contactId", "opportunityId", "assigneeUserId", "dueAt"]);

/** The proto's set / clear / absent triple as the domain's changes, checked. */
function changesOf(f: TaskFields | undefined, opts: { create: boolean }): TaskChanges {
  const problems: ErrorDetail[] = [];
  const changes: TaskChanges = {};
  if (!f) return changes;
  if (opts.create && f.title === undefined) problems.push({ path: "title", message: "title is required" });
  if (f.title !== undefined && (f.title.trim() === "" || f.title.length > 500))
    problems.push({ path: "title", message: "title must have 1 to 500 characters" });
  if (f.body !== undefined && f.body.length > 10_000)
    problems.push({ path: "body", message: "body must have at most 10000 characters" });
  for (const k of ["contactId", "opportunityId", "assigneeUserId"] as const) {
    const v = f[k];
    if (v !== undefined && (v.trim() === "" || v.length > 200))
      problems.push({ path: k, message: `${k} must have 1 to 200 characters` });
  }
  let dueAt: Date | undefined;
  if (f.dueAt !== undefined) {
    dueAt = parseTimestamp(f.dueAt);
    if (!dueAt) problems.push({ path: "dueAt", message: "dueAt must be an ISO-8601 timestamp" });
  }
  if (opts.create && (f.completed !== undefined || f.clear.length > 0))
    problems.push({ path: "completed", message: "a new task cannot be completed or cleared" });
  for (const name of f.clear)
    if (!CLEARABLE.has(name)) problems.push({ path: name, message: `${name} cannot be cleared` });
  if (problems.length > 0) throw invalid(problems.map((p) => p.message).join("; "), problems);

  if (f.title !== undefined) changes.title = f.title.trim();
  for (const k of ["body", "contactId", "opportunityId", "assigneeUserId"] as const)
    if (f[k] !== undefined) changes[k] = f[k];
  if (dueAt) changes.dueAt = dueAt;
  if (f.completed !== undefined) changes.completed = f.completed;
  for (const name of f.clear) (changes as Record<string, null>)[name] = null;
  return changes;
}

const LIST = "tasks";

export function taskService(deps: { tasks: TaskStore; clock: Clock }): ServiceImpl<typeof TaskService> {
  const { tasks, clock } = deps;
  return {
    async listTasks(req) {
      const filters = { assigneeUserId: req.assigneeUserId, open: req.open };
      const { rows, nextCursor } = await keysetPage<TaskRecord>({
        list: LIST,
        workspaceId: req.workspaceId,
        filters,
        cursor: req.cursor,
        limit: req.limit,
        defaultLimit: 50,
        sortKey: (t) => t.createdAt,
        fetch: (take, after) => tasks.list(req.workspaceId, filters, take, after),
      });
      return { data: rows.map(taskToProto), nextCursor };
    },

    async createTask(req) {
      const changes = changesOf(req.fields, { create: true });
      const task = await tasks.create(req.workspaceId, { ...changes, title: changes.title! }, clock.now());
      return { task: taskToProto(task) };
    },

    async updateTask(req) {
      const changes = changesOf(req.fields, { create: false });
      return { task: taskToProto(await tasks.update(req.workspaceId, req.id, changes, clock.now())) };
    },
  };
}

export function noteService(deps: { notes: NoteStore; clock: Clock }): ServiceImpl<typeof NoteService> {
  return {
    async createNote(req) {
      const problems: ErrorDetail[] = [];
      for (const k of ["contactId", "userId"] as const)
        if (req[k].trim() === "" || req[k].length > 200)
          problems.push({ path: k, message: `${k} is required` });
      if (
        req.opportunityId !== undefined &&
        (req.opportunityId.trim() === "" || req.opportunityId.length > 200)
      )
        problems.push({ path: "opportunityId", message: "opportunityId must have 1 to 200 characters" });
      if (req.body.trim() === "" || req.body.length > 10_000)
        problems.push({ path: "body", message: "body must have 1 to 10000 characters" });
      if (problems.length > 0) throw invalid(problems.map((p) => p.message).join("; "), problems);
      const note = await deps.notes.create(
        req.workspaceId,
        { contactId: req.contactId, opportunityId: req.opportunityId, body: req.body, userId: req.userId },
        deps.clock.now(),
      );
      return { note: noteToProto(note) };
    },
  };
}
