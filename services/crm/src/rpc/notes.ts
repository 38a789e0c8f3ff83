import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import { CreateNoteRequestSchema, type NoteService } from "@funil/contracts";
import { plainOf } from "@funil/rpc";
import { check, createNoteBody } from "@funil/schemas";
import type { NoteStore } from "../store/notes.js";
import { noteWire } from "./wire.js";

export function noteService(deps: { notes: NoteStore; clock: Clock }): ServiceImpl<typeof NoteService> {
  return {
    async createNote(req) {
      const body = check(createNoteBody, plainOf(CreateNoteRequestSchema, req), "body");
      const note = await deps.notes.create(
        req.workspaceId,
        {
          contactId: body.contactId,
          opportunityId: body.opportunityId ?? undefined,
          body: body.body,
          userId: body.userId,
        },
        deps.clock.now(),
      );
      return { note: noteWire.proto(note) };
    },
  };
}
