import {
  coalescedReads,
  type EmitChange,
  inTransaction,
  keptRecords,
  newId,
  type Origin,
  type Sql,
  type TransactionSql,
} from "@funil/db";
import { applyPatch, type SubscriptionChanges, type SubscriptionRecord } from "../subscriptions.js";

export const columns = (sql: Sql) => sql`
  id, workspace_id, key_id, url, events, description, active, disabled_reason, failing_since, created_at, updated_at,
  version`;

/** The secret to rotate in for 24 h besides the new one (docs/api/webhooks.md §POST /webhooks/{id}/rotate-secret). */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000;

/**
 * The internal events of a subscription's changes (docs/api/events.md §Every event type): not
 * subscribable, they make every change of a subscription listable by GET /audit.
 */
export type SubscriptionEventType =
  | "webhook.created"
  | "webhook.updated"
  | "webhook.deleted"
  | "webhook.secret_rotated";
export type EmitSubscriptionEvent = EmitChange<SubscriptionEventType, SubscriptionRecord>;

/** What a rotation changes: the secret, which the API never shows as a field. */
const SECRET = ["secret"];

export function subscriptionStore(sql: Sql, emit: EmitSubscriptionEvent) {
  /** Subscriptions kept in memory at their version: a list reads ids and versions, and only the others whole. */
  const kept = keptRecords<SubscriptionRecord>({
    read: (workspaceId, ids) => sql<SubscriptionRecord[]>`
      select ${columns(sql)} from subscriptions where workspace_id = ${workspaceId} and id = any(${ids as string[]})`,
    refs: (workspaceId) => sql<{ id: string; version: number }[]>`
      select id, version from subscriptions where workspace_id = ${workspaceId}
      order by created_at, id limit 1000`,
  });
  return {
    async create(
      workspaceId: string,
      input: { keyId: string; url: string; events: string[]; description: string | null },
      sealedSecret: string,
      now: Date,
      by: Origin,
      /** The transaction of an Idempotency-Key, when the request has one. */
      outer?: TransactionSql,
    ): Promise<SubscriptionRecord> {
      return inTransaction(sql, outer, async (db) => {
        const [row] = await db<SubscriptionRecord[]>`
        insert into subscriptions ${db({
          id: newId("wh", now.getTime()),
          workspace_id: workspaceId,
          key_id: input.keyId,
          url: input.url,
          events: input.events,
          description: input.description,
          secret: sealedSecret,
          created_at: now,
          updated_at: now,
        })} returning ${columns(sql)}`;
        await emit(db, "webhook.created", row!, by);
        return row!;
      });
    },

    /**
     * Every subscription of the workspace, oldest first (a handful per workspace: one page); their ids and
     * versions read once for the lists of the workspace asked in the same turn.
     */
    async list(workspaceId: string): Promise<SubscriptionRecord[]> {
      return kept.list(workspaceId);
    },

    /** A subscription by id; the reads of one RPC batch in one statement. */
    get: coalescedReads<SubscriptionRecord>(sql, {
      async one(workspaceId, id) {
        const [row] = await sql<SubscriptionRecord[]>`
          select ${columns(sql)} from subscriptions where workspace_id = ${workspaceId} and id = ${id}`;
        return row;
      },
      many: (keys) => sql<SubscriptionRecord[]>`
        select ${columns(sql)} from subscriptions where (workspace_id, id) in ${keys}`,
    }),

    /** PATCH; a change that changes nothing writes nothing (updatedAt stays). */
    async update(
      workspaceId: string,
      id: string,
      changes: SubscriptionChanges,
      now: Date,
      by: Origin,
    ): Promise<SubscriptionRecord | undefined> {
      return sql.begin(async (tx) => {
        const [found] = await tx<SubscriptionRecord[]>`
          select ${columns(sql)} from subscriptions where workspace_id = ${workspaceId} and id = ${id} for update`;
        if (!found) return undefined;
        const next = applyPatch(found, changes, now);
        if (next === found) return found;
        const [row] = await tx<SubscriptionRecord[]>`
          update subscriptions set ${tx({
            url: next.url,
            events: next.events,
            description: next.description,
            key_id: next.keyId,
            active: next.active,
            disabled_reason: next.disabledReason,
            failing_since: next.failingSince,
            updated_at: next.updatedAt,
          })} where id = ${id} returning ${columns(sql)}`;
        await emit(tx, "webhook.updated", row!, by, found);
        return row;
      });
    },

    /**
     * Deletes it and, with it, its deliveries (their queued jobs find nothing
     * and end). The subscription goes first: a fan-out that matched it holds
     * it (for key share) until it commits, so its deliveries are in by the
     * time they are deleted here, and a later fan-out no longer matches it.
     */
    async remove(workspaceId: string, id: string, now: Date, by: Origin): Promise<boolean> {
      return sql.begin(async (tx) => {
        const [row] = await tx<SubscriptionRecord[]>`
          delete from subscriptions where workspace_id = ${workspaceId} and id = ${id} returning ${columns(sql)}`;
        if (!row) return false;
        await tx`delete from deliveries where subscription_id = ${id}`;
        // The event's time is the deletion's; its data the subscription as it was.
        await emit(tx, "webhook.deleted", { ...row, updatedAt: now }, by, []);
        return true;
      });
    },

    /** A new secret; the current one keeps signing for 24 h as a second v1. */
    async rotate(
      workspaceId: string,
      id: string,
      sealedSecret: string,
      now: Date,
      by: Origin,
    ): Promise<boolean> {
      return sql.begin(async (tx) => {
        const [row] = await tx<SubscriptionRecord[]>`
          update subscriptions set previous_secret = secret, secret = ${sealedSecret},
            previous_secret_until = ${new Date(now.getTime() + PREVIOUS_SECRET_MS)}, updated_at = ${now}
          where workspace_id = ${workspaceId} and id = ${id} returning ${columns(sql)}`;
        if (!row) return false;
        await emit(tx, "webhook.secret_rotated", row, by, SECRET);
        return true;
      });
    },
  };
}
export type SubscriptionStore = ReturnType<typeof subscriptionStore>;
