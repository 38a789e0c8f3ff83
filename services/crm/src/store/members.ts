import { type EmitChange, isUniqueViolation, keptRecords, newId, type Origin, type Sql } from "@funil/db";
import { fail } from "@funil/errors";

export interface MemberRecord {
  id: string;
  name: string;
  email: string;
  role: string;
  active: boolean;
  createdAt: Date;
  /** How many times the member was updated (migration 00006): what a kept copy of it is checked against. */
  version: number;
}

/** A member as its events carry it: with its workspace and the time of the change. */
export type MemberChange = MemberRecord & { workspaceId: string; updatedAt: Date };
/** Internal events (docs/api/events.md §Every event type): every change of a member is in GET /audit. */
export type EmitMemberEvent = EmitChange<"member.created" | "member.updated", MemberChange>;

const COLUMNS = "id, name, email, role, active, created_at, version";

const conflict = () => fail("conflict", "a member with this e-mail already exists in the workspace");

export function memberStore(sql: Sql, emit: EmitMemberEvent) {
  /** Members kept in memory at their version: a list reads ids and versions, and only the others whole. */
  const kept = keptRecords<MemberRecord>({
    read: (workspaceId, ids) => sql<MemberRecord[]>`
      select ${sql.unsafe(COLUMNS)} from members where workspace_id = ${workspaceId} and id = any(${ids as string[]})`,
    refs: (workspaceId) => sql<{ id: string; version: number }[]>`
      select id, version from members where workspace_id = ${workspaceId} order by created_at, id`,
  });
  return {
    async create(
      workspaceId: string,
      m: Omit<MemberRecord, "id" | "createdAt" | "version">,
      now: Date,
      by: Origin,
    ) {
      try {
        return await sql.begin(async (tx) => {
          const [row] = await tx<MemberRecord[]>`
            insert into members ${tx({
              id: newId("usr", now.getTime()),
              workspace_id: workspaceId,
              ...m,
              created_at: now,
              updated_at: now,
            })} returning ${tx.unsafe(COLUMNS)}`;
          await emit(tx, "member.created", { ...row!, workspaceId, updatedAt: now }, by);
          return row!;
        });
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
      by: Origin,
    ) {
      const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
      return sql.begin(async (tx) => {
        const [found] = await tx<MemberRecord[]>`
          select ${tx.unsafe(COLUMNS)} from members where workspace_id = ${workspaceId} and id = ${id} for update`;
        if (!found) return undefined;
        const [row] = await tx<MemberRecord[]>`
          update members set ${tx({ ...set, updated_at: now })} where workspace_id = ${workspaceId} and id = ${id}
          returning ${tx.unsafe(COLUMNS)}`;
        const change = { ...row!, workspaceId, updatedAt: now };
        await emit(tx, "member.updated", change, by, { ...found, workspaceId, updatedAt: now });
        return row;
      });
    },
    /**
     * Deactivated members stay in the list, so old assignees still resolve. Their ids and versions are read
     * once for the lists of the workspace asked in the same turn.
     */
    async list(workspaceId: string): Promise<MemberRecord[]> {
      return kept.list(workspaceId);
    },
    async exists(workspaceId: string, id: string) {
      const [row] = await sql`select 1 from members where workspace_id = ${workspaceId} and id = ${id}`;
      return row !== undefined;
    },
  };
}
export type MemberStore = ReturnType<typeof memberStore>;
