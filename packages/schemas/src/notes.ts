import { z } from "zod";
import { ref, title } from "./common.js";

export const createNoteBody = z
  .strictObject({
    contactId: ref,
    opportunityId: ref.nullable().optional(),
    body: title(10_000, "body"),
    userId: ref,
  })
  .meta({ id: "NoteCreate" });
