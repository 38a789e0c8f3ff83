import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import { CreateNoteRequestSchema, CreateNoteResponseSchema, type NoteService } from "@funil/contracts";
import { originOf, type Sql } from "@funil/db";
import { asMessageJson, idempotent, keyedCall, plainOf } from "@funil/rpc";
import { check, createNoteBody } from "@funil/schemas";
import type { NoteStore } from "../store/notes.js";
import { noteWire } from "./wire.js";

const rememberCreated = asMessageJson(CreateNoteResponseSchema);

export function noteService(deps: {
  sql: Sql;
  notes: NoteStore;
  clock: Clock;
}): ServiceImpl<typeof NoteService> {
  return {
    async createNote(req, ctx) {
      const plain = plainOf(CreateNoteRequestSchema, req, ["workspaceId", "idempotencyKey"]);
      const body = check(createNoteBody, plain, "body");
      const call = keyedCall(deps.sql, req, "CreateNote", plain, deps.clock.now(), rememberCreated);
      return idempotent(ctx, call, async (tx) => {
        const note = await deps.notes.create(
          req.workspaceId,
          {
            contactId: body.contactId,
            opportunityId: body.opportunityId ?? undefined,
            body: body.body,
            userId: body.userId,
          },
          call.now,
          originOf(ctx.requestHeader),
          tx,
        );
        return { note: noteWire.proto(note) };
      });
    },
  };
}
