import { type EmitChange, inTransaction, newId, type Origin, type Sql, type TransactionSql } from "@funil/db";
import { invalidReference } from "@funil/errors";
import { checkReferences, mapWriteError, type Reference } from "./references.js";

export interface NoteRecord {
  id: string;
  workspaceId: string;
  contactId: string;
  opportunityId: string | null;
  body: string;
  userId: string;
  createdAt: Date;
}

export type EmitNoteEvent = EmitChange<"note.created", NoteRecord>;

export function noteStore(sql: Sql, emit: EmitNoteEvent) {
  return {
    /**
     * A note by a member about a contact and, optionally, one of that
     * contact's live deals (another contact's deal is a 422).
     */
    async create(
      workspaceId: string,
      input: { contactId: string; opportunityId?: string; body: string; userId: string },
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ): Promise<NoteRecord> {
      return inTransaction(sql, outer, async (tx) => {
        const refs: Reference[] = [
          { path: "contactId", kind: "contact", id: input.contactId },
          { path: "userId", kind: "member", id: input.userId },
        ];
        if (input.opportunityId)
          refs.push({ path: "opportunityId", kind: "opportunity", id: input.opportunityId });
        await checkReferences(tx, workspaceId, refs);
        if (input.opportunityId) {
          const [deal] = await tx<{ contactId: string }[]>`
            select contact_id from opportunities where workspace_id = ${workspaceId} and id = ${input.opportunityId}`;
          if (deal?.contactId !== input.contactId)
            throw invalidReference([
              { path: "opportunityId", message: "the opportunity belongs to another contact" },
            ]);
        }
        try {
          const [row] = await tx<NoteRecord[]>`
            insert into notes ${tx({
              id: newId("note", now.getTime()),
              workspace_id: workspaceId,
              contact_id: input.contactId,
              opportunity_id: input.opportunityId ?? null,
              body: input.body,
              user_id: input.userId,
              created_at: now,
            })} returning id, workspace_id, contact_id, opportunity_id, body, user_id, created_at`;
          await emit(tx, "note.created", row!, by);
          return row!;
        } catch (err) {
          mapWriteError(err);
        }
      });
    },
  };
}
export type NoteStore = ReturnType<typeof noteStore>;
