import { z } from "zod";
import { cursor, limit, ref, text, timestamp, title } from "./common.js";

export const listTasksQuery = z.strictObject({
  assigneeUserId: ref.optional(),
  open: z.enum(["true", "false"], { message: "open is true or false" }).optional(),
  cursor: cursor.optional(),
  limit: limit(50),
});

export const createTaskBody = z
  .strictObject({
    title: title(500),
    body: text(10_000).nullable().optional(),
    contactId: ref.nullable().optional(),
    opportunityId: ref.nullable().optional(),
    assigneeUserId: ref.nullable().optional(),
    dueAt: timestamp.nullable().optional(),
  })
  .meta({ id: "TaskCreate" });

export const patchTaskBody = z
  .strictObject({
    title: title(500).optional(),
    body: text(10_000).nullable().optional(),
    contactId: ref.nullable().optional(),
    opportunityId: ref.nullable().optional(),
    assigneeUserId: ref.nullable().optional(),
    dueAt: timestamp.nullable().optional(),
    completed: z.boolean().optional(),
  })
  .meta({ id: "TaskPatch" });
