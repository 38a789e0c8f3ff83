import { z } from "zod";
import { text } from "./common.js";
import { ref } from "./deals.js";

export const note = z
  .object({
    id: z.string(),
    contactId: z.string(),
    opportunityId: z.string().nullable(),
    body: z.string(),
    userId: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: "Note" });

export const createNoteBody = z
  .strictObject({
    contactId: ref,
    opportunityId: ref.nullable().optional(),
    body: text(10_000)
      .min(1, "body must not be empty")
      .refine((t) => t.trim() !== "", "body must not be empty"),
    userId: ref,
  })
  .meta({ id: "NoteCreate" });
