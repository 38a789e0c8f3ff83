import { newId, type Sql } from "@funil/db";

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

const keyColumns = (sql: Sql) => sql`
  k.id, k.workspace_id, k.name, k.prefix, k.hash, k.scopes, k.created_at, k.revoked_at, w.operator`;

export function keyStore(sql: Sql) {
  return {
    async createWorkspace(name: string, operator: boolean, now: Date) {
      const [row] = await sql<WorkspaceRecord[]>`
        insert into workspaces ${sql({ id: newId("ws", now.getTime()), name, operator, created_at: now, updated_at: now })}
        returning id, name, operator, created_at`;
      return row!;
    },
    async updateWorkspace(id: string, changes: { name?: string; operator?: boolean }, now: Date) {
      const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
      const [row] = await sql<WorkspaceRecord[]>`
        update workspaces set ${sql({ ...set, updated_at: now })} where id = ${id}
        returning id, name, operator, created_at`;
      return row;
    },
    async getWorkspace(id: string) {
      const [row] = await sql<
        WorkspaceRecord[]
      >`select id, name, operator, created_at from workspaces where id = ${id}`;
      return row;
    },
    async listWorkspaces() {
      return sql<
        WorkspaceRecord[]
      >`select id, name, operator, created_at from workspaces order by created_at, id`;
    },
    async createKey(
      workspaceId: string,
      k: { name: string; prefix: string; hash: string; scopes: string[] },
      now: Date,
    ) {
      const id = newId("key", now.getTime());
      await sql`insert into api_keys ${sql({ id, workspace_id: workspaceId, ...k, created_at: now, updated_at: now })}`;
      return (await this.getKey(id))!;
    },
    async getKey(id: string) {
      const [row] = await sql<KeyRecord[]>`
        select ${keyColumns(sql)} from api_keys k join workspaces w on w.id = k.workspace_id where k.id = ${id}`;
      return row;
    },
    /** The active key with this hash, if any. */
    async findActiveByHash(hash: string) {
      const [row] = await sql<KeyRecord[]>`
        select ${keyColumns(sql)} from api_keys k join workspaces w on w.id = k.workspace_id
        where k.hash = ${hash} and k.revoked_at is null`;
      return row;
    },
    async setScopes(id: string, scopes: string[], now: Date) {
      const [row] = await sql`
        update api_keys set scopes = ${scopes}, updated_at = ${now} where id = ${id} and revoked_at is null returning id`;
      return row ? this.getKey(id) : undefined;
    },
    async revoke(id: string, now: Date) {
      const [row] = await sql`
        update api_keys set revoked_at = coalesce(revoked_at, ${now}), updated_at = ${now} where id = ${id} returning id`;
      return row !== undefined;
    },
  };
}
export type KeyStore = ReturnType<typeof keyStore>;
