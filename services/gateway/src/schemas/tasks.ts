import { z } from "zod";
import { cursor, limit, page, text, timestamp } from "./common.js";
import { ref } from "./deals.js";

const nullableString = z.string().nullable();

export const task = z
  .object({
    id: z.string(),
    contactId: nullableString,
    opportunityId: nullableString,
    title: z.string(),
    body: nullableString,
    assigneeUserId: nullableString,
    dueAt: nullableString,
    completedAt: nullableString,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: "Task" });

export const taskList = page(task);

export const listTasksQuery = z.strictObject({
  assigneeUserId: ref.optional(),
  open: z.enum(["true", "false"], { message: "open is true or false" }).optional(),
  cursor: cursor.optional(),
  limit: limit(50),
});

const title = text(500)
  .min(1, "title must not be empty")
  .refine((t) => t.trim() !== "", "title must not be empty");

export const createTaskBody = z
  .strictObject({
    title,
    body: text(10_000).nullable().optional(),
    contactId: ref.nullable().optional(),
    opportunityId: ref.nullable().optional(),
    assigneeUserId: ref.nullable().optional(),
    dueAt: timestamp.nullable().optional(),
  })
  .meta({ id: "TaskCreate" });

export const patchTaskBody = z
  .strictObject({
    title: title.optional(),
    body: text(10_000).nullable().optional(),
    contactId: ref.nullable().optional(),
    opportunityId: ref.nullable().optional(),
    assigneeUserId: ref.nullable().optional(),
    dueAt: timestamp.nullable().optional(),
    completed: z.boolean().optional(),
  })
  .meta({ id: "TaskPatch" });
