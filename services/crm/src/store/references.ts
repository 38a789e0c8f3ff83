import type { TransactionSql } from "@funil/db";
import { apiError, type ErrorDetail } from "@funil/rpc";

export type ReferenceKind = "contact" | "pipeline" | "opportunity" | "member";

export interface Reference {
  /** The API name of the field that holds the id, for the error details. */
  path: string;
  kind: ReferenceKind;
  id: string;
}

const FOREIGN_KEY_VIOLATION = "23503";

export const isForeignKeyViolation = (err: unknown) =>
  (err as { code?: string })?.code === FOREIGN_KEY_VIOLATION;

/**
 * Checks that every referenced row exists in the workspace (a trashed deal
 * does not); throws one 422 invalid_reference naming each missing one
 * (API.md §1). The foreign keys of the tables stay the final guard.
 */
export async function checkReferences(
  tx: TransactionSql,
  workspaceId: string,
  refs: Reference[],
): Promise<void> {
  const problems: ErrorDetail[] = [];
  for (const ref of refs) {
    const rows =
      ref.kind === "contact"
        ? await tx`select 1 from contacts where workspace_id = ${workspaceId} and id = ${ref.id}`
        : ref.kind === "pipeline"
          ? await tx`select 1 from pipelines where workspace_id = ${workspaceId} and id = ${ref.id}`
          : ref.kind === "member"
            ? await tx`select 1 from members where workspace_id = ${workspaceId} and id = ${ref.id}`
            : await tx`
                select 1 from opportunities
                where workspace_id = ${workspaceId} and id = ${ref.id} and trashed_at is null`;
    if (rows.length === 0)
      problems.push({ path: ref.path, message: `no ${ref.kind} ${ref.id} in this workspace` });
  }
  if (problems.length > 0) throw invalidReference(problems);
}

export function invalidReference(problems: ErrorDetail[]) {
  return apiError("invalid_reference", problems.map((p) => `${p.path}: ${p.message}`).join("; "), problems);
}
