import {
  coalescedByKey,
  type EmitChange,
  newId,
  type Origin,
  type Sql,
  type TransactionSql,
} from "@funil/db";

export interface WorkspaceRecord {
  id: string;
  name: string;
  operator: boolean;
  createdAt: Date;
}

export interface KeyRecord {
  id: string;
  workspaceId: string;
  name: string;
  prefix: string;
  hash: string;
  scopes: string[];
  createdAt: Date;
  revokedAt: Date | null;
  operator: boolean;
}

/** A workspace as its events carry it: its own id is its workspace, with the time of the change. */
export type WorkspaceChange = WorkspaceRecord & { workspaceId: string; updatedAt: Date };
/** A key as its events carry it (never its hash), with the time of the change. */
export type KeyChange = KeyRecord & { updatedAt: Date };

/**
 * Internal events (docs/api/events.md §Every event type): every change of a workspace or an API key is in the
 * workspace's GET /audit, written in the change's transaction like every service's.
 */
export interface KeyStoreEvents {
  workspace: EmitChange<"workspace.created" | "workspace.updated", WorkspaceChange>;
  key: EmitChange<"api_key.created" | "api_key.updated" | "api_key.revoked", KeyChange>;
}

const WORKSPACE_COLUMNS = "id, name, operator, created_at";

const keyColumns = (sql: Sql) => sql`
  k.id, k.workspace_id, k.name, k.prefix, k.hash, k.scopes, k.created_at, k.revoked_at, w.operator`;

const workspaceChange = (w: WorkspaceRecord, updatedAt: Date): WorkspaceChange => ({
  ...w,
  workspaceId: w.id,
  updatedAt,
});

export function keyStore(sql: Sql, emit: KeyStoreEvents) {
  /** The key with this id, revoked or not; `lock`: held for the rest of the transaction. */
  const keyIn = async (tx: Sql | TransactionSql, id: string, lock = false) => {
    const [row] = await tx<KeyRecord[]>`
      select ${keyColumns(sql)} from api_keys k join workspaces w on w.id = k.workspace_id
      where k.id = ${id} ${lock ? sql`for update of k` : sql``}`;
    return row;
  };
  const allWorkspaces = coalescedByKey(
    () =>
      sql<WorkspaceRecord[]>`select ${sql.unsafe(WORKSPACE_COLUMNS)} from workspaces order by created_at, id`,
  );
  return {
    async createWorkspace(name: string, operator: boolean, now: Date, by: Origin) {
      return sql.begin(async (tx) => {
        const [row] = await tx<WorkspaceRecord[]>`
          insert into workspaces ${tx({ id: newId("ws", now.getTime()), name, operator, created_at: now, updated_at: now })}
          returning ${tx.unsafe(WORKSPACE_COLUMNS)}`;
        await emit.workspace(tx, "workspace.created", workspaceChange(row!, now), by);
        return row!;
      });
    },
    async updateWorkspace(id: string, changes: { name?: string; operator?: boolean }, now: Date, by: Origin) {
      const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
      return sql.begin(async (tx) => {
        const [found] = await tx<WorkspaceRecord[]>`
          select ${tx.unsafe(WORKSPACE_COLUMNS)} from workspaces where id = ${id} for update`;
        if (!found) return undefined;
        const [row] = await tx<WorkspaceRecord[]>`
          update workspaces set ${tx({ ...set, updated_at: now })} where id = ${id}
          returning ${tx.unsafe(WORKSPACE_COLUMNS)}`;
        await emit.workspace(
          tx,
          "workspace.updated",
          workspaceChange(row!, now),
          by,
          workspaceChange(found, now),
        );
        return row;
      });
    },
    async getWorkspace(id: string) {
      const [row] = await sql<
        WorkspaceRecord[]
      >`select ${sql.unsafe(WORKSPACE_COLUMNS)} from workspaces where id = ${id}`;
      return row;
    },
    /** Every workspace in creation order (the lists asked in the same turn share the statement; read only). */
    listWorkspaces: () => allWorkspaces("all"),
    async createKey(
      workspaceId: string,
      k: { name: string; prefix: string; hash: string; scopes: string[] },
      now: Date,
      by: Origin,
    ) {
      const id = newId("key", now.getTime());
      return sql.begin(async (tx) => {
        await tx`insert into api_keys ${tx({ id, workspace_id: workspaceId, ...k, created_at: now, updated_at: now })}`;
        const key = (await keyIn(tx, id))!;
        await emit.key(tx, "api_key.created", { ...key, updatedAt: now }, by);
        return key;
      });
    },
    getKey: (id: string) => keyIn(sql, id),
    /** The active key with this hash, if any. */
    async findActiveByHash(hash: string) {
      const [row] = await sql<KeyRecord[]>`
        select ${keyColumns(sql)} from api_keys k join workspaces w on w.id = k.workspace_id
        where k.hash = ${hash} and k.revoked_at is null`;
      return row;
    },
    /** Replaces an active key's scopes; undefined when there is no active key with this id. */
    async setScopes(id: string, scopes: string[], now: Date, by: Origin) {
      return sql.begin(async (tx) => {
        const found = await keyIn(tx, id, true);
        if (!found || found.revokedAt) return undefined;
        await tx`update api_keys set scopes = ${scopes}, updated_at = ${now} where id = ${id}`;
        const key = { ...found, scopes };
        await emit.key(tx, "api_key.updated", { ...key, updatedAt: now }, by, { ...found, updatedAt: now });
        return key;
      });
    },
    /** Revokes a key; false when there is none. Revoking a revoked key changes nothing and says nothing. */
    async revoke(id: string, now: Date, by: Origin) {
      return sql.begin(async (tx) => {
        const found = await keyIn(tx, id, true);
        if (!found) return false;
        if (found.revokedAt) return true;
        await tx`update api_keys set revoked_at = ${now}, updated_at = ${now} where id = ${id}`;
        await emit.key(tx, "api_key.revoked", { ...found, revokedAt: now, updatedAt: now }, by, {
          ...found,
          updatedAt: now,
        });
        return true;
      });
    },
  };
}
export type KeyStore = ReturnType<typeof keyStore>;
