import { z } from "zod";
import { title } from "./common.js";

export const fieldEntity = z.enum(["contact", "opportunity"]);
export const fieldType = z.enum(["text", "number", "boolean", "date", "select"]);

export const listCustomFieldsQuery = z.strictObject({ entity: fieldEntity.optional() });

export const createCustomFieldBody = z
  .strictObject({
    entity: fieldEntity,
    fieldKey: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, "a letter, then letters, digits or _ (64 at most)"),
    label: title(200, "label"),
    type: fieldType,
    options: z.array(z.string().min(1).max(200)).max(200).optional(),
  })
  .refine((f) => f.type !== "select" || (f.options?.length ?? 0) > 0, {
    message: "a select field needs options",
    path: ["options"],
  });

const role = title(60, "role");
export const createMemberBody = z.strictObject({
  name: title(200, "name"),
  email: z.email().max(200),
  role,
  active: z.boolean().optional(),
});

export const patchMemberBody = z.strictObject({
  name: title(200, "name").optional(),
  role: role.optional(),
  active: z.boolean().optional(),
});
