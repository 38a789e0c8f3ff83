import { isForeignKeyViolation, type TransactionSql } from "@funil/db";
import { type ErrorDetail, invalidReference } from "@funil/errors";

export type ReferenceKind = "contact" | "pipeline" | "opportunity" | "member";

export interface Reference {
  /** The API name of the field that holds the id, for the error details. */
  path: string;
  kind: ReferenceKind;
  id: string;
}

/**
 * Checks that every referenced row exists in the workspace (a trashed deal
 * and an erased contact do not); throws one 422 invalid_reference naming each missing one
 * (docs/api/conventions.md §Errors). The foreign keys of the tables stay the final guard.
 */
export async function checkReferences(
  tx: TransactionSql,
  workspaceId: string,
  refs: Reference[],
): Promise<void> {
  // Sent together: postgres pipelines them on the transaction's connection.
  const found = await Promise.all(
    refs.map((ref) =>
      ref.kind === "contact"
        ? // Locked as its foreign key would lock it: a write racing an erasure waits for it, then sees
          // the contact erased (the row is read again once the erasure commits).
          tx`
            select 1 from contacts where workspace_id = ${workspaceId} and id = ${ref.id} and status <> 'erased'
            for key share`
        : ref.kind === "pipeline"
          ? tx`select 1 from pipelines where workspace_id = ${workspaceId} and id = ${ref.id}`
          : ref.kind === "member"
            ? tx`select 1 from members where workspace_id = ${workspaceId} and id = ${ref.id}`
            : tx`
                select 1 from opportunities
                where workspace_id = ${workspaceId} and id = ${ref.id} and trashed_at is null`,
    ),
  );
  const problems: ErrorDetail[] = refs
    .filter((_, i) => found[i]!.length === 0)
    .map((ref) => ({ path: ref.path, message: `no ${ref.kind} ${ref.id} in this workspace` }));
  if (problems.length > 0) throw invalidReference(problems);
}

/** A race the checks could not see (the foreign keys decide): still a 422, never a 500. */
export function mapWriteError(err: unknown): never {
  if (isForeignKeyViolation(err))
    throw invalidReference([
      { path: "reference", message: "a referenced record does not exist in this workspace" },
    ]);
  throw err;
}
