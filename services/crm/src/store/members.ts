import { isUniqueViolation, newId, type Sql } from "@funil/db";
import { fail } from "@funil/errors";

export interface MemberRecord {
  id: string;
  name: string;
  email: string;
  role: string;
  active: boolean;
  createdAt: Date;
}

const conflict = () => fail("conflict", "a member with this e-mail already exists in the workspace");

export function memberStore(sql: Sql) {
  return {
    async create(workspaceId: string, m: Omit<MemberRecord, "id" | "createdAt">, now: Date) {
      try {
        const [row] = await sql<MemberRecord[]>`
          insert into members ${sql({
            id: newId("usr", now.getTime()),
            workspace_id: workspaceId,
            ...m,
            created_at: now,
            updated_at: now,
          })} returning id, name, email, role, active, created_at`;
        return row!;
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict();
        throw err;
      }
    },
    async update(
      workspaceId: string,
      id: string,
      changes: Partial<Pick<MemberRecord, "name" | "role" | "active">>,
      now: Date,
    ) {
      const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
      const [row] = await sql<MemberRecord[]>`
        update members set ${sql({ ...set, updated_at: now })}
        where workspace_id = ${workspaceId} and id = ${id}
        returning id, name, email, role, active, created_at`;
      return row;
    },
    /** Deactivated members stay in the list, so old assignees still resolve. */
    async list(workspaceId: string) {
      return sql<MemberRecord[]>`
        select id, name, email, role, active, created_at from members
        where workspace_id = ${workspaceId} order by created_at, id`;
    },
    async exists(workspaceId: string, id: string) {
      const [row] = await sql`select 1 from members where workspace_id = ${workspaceId} and id = ${id}`;
      return row !== undefined;
    },
  };
}
export type MemberStore = ReturnType<typeof memberStore>;
