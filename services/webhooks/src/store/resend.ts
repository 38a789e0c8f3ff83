import { type EmitChange, type Origin, type Sql, writeMessage } from "@funil/db";
import { type DeliveryRecord, jobsOf } from "./deliveries.js";

/** What a recover did: deliveries queued, and those of the window left for another call (from nextSince). */
export interface Recovered {
  queued: number;
  notQueued: number;
  nextSince: Date | null;
}

/** Deliveries of a subscription put back in line, as their internal event carries them. */
export interface Resent {
  /** The subscription's id: the audit lists the event under it (entity `webhook`). */
  id: string;
  workspaceId: string;
  deliveryIds: string[];
  updatedAt: Date;
}
/**
 * `webhook.resent` (docs/api/events.md §Every event type): a resend or a recover that put deliveries back in
 * line, with who asked, so that GET /audit lists it with the subscription's other changes.
 */
export type EmitResent = EmitChange<"webhook.resent", Resent>;

/** Who asks for a resend or a recover: the workspace of the subscription and the caller. */
export interface Asker {
  workspaceId: string;
  by: Origin;
}

/**
 * `subject(subscriptionId)`: where a delivery's job is queued (WEBHOOK_DELIVERIES).
 * A job leaves through the outbox, in the transaction that creates its
 * deliveries: committed means queued, however the process ends after.
 */

const columns = (sql: Sql) =>
  sql`id, subscription_id, event, status, attempts, response_status, last_error, last_attempt_at, created_at`;

/**
 * A new series of attempts of the deliveries `ids` of an active
 * subscription that are not pending (docs/api/webhooks.md §Resend and
 * recover): pending and due now, each owned by a new job queued through
 * the outbox in the same transaction. A delivery pending already keeps its
 * one job (never two series at once); so does every delivery of a
 * subscription that is not active. Answers the ids put back. A store's
 * requeue: its database, where its jobs go, and its event.
 */
const requeuer =
  (sql: Sql, subject: (subscriptionId: string) => string, emit: EmitResent) =>
  async (subscriptionId: string, ids: string[], now: Date, asker: Asker): Promise<string[]> => {
    if (ids.length === 0) return [];
    return sql.begin(async (tx) => {
      // Held until the commit: a deactivation waits, then finds these pending and ends them dead.
      const [sub] = await tx<{ active: boolean }[]>`
      select active from subscriptions where id = ${subscriptionId} for share`;
      if (!sub?.active) return [];
      const jobs = jobsOf(
        subject,
        ids.map((id) => ({ id, subscriptionId })),
        now,
      );
      const jobOf = jobs.flatMap((j) => j.payload.deliveryIds.map((id) => [id, j.id] as const));
      // Rows made pending by a racing resend since they were chosen are skipped (the where is read again).
      const rows = await tx<{ id: string; queuedJob: string }[]>`
      update deliveries d set status = 'pending', next_attempt_at = null, retry_from = d.attempts,
        queued_job = r.job
      from unnest(${jobOf.map(([id]) => id)}::text[], ${jobOf.map(([, job]) => job)}::text[]) as r(id, job)
      where d.id = r.id and d.subscription_id = ${subscriptionId} and d.status <> 'pending'
      returning d.id, d.queued_job`;
      const put = new Set(rows.map((r) => r.id));
      const queued = jobs
        .map((j) => ({
          ...j,
          payload: { ...j.payload, deliveryIds: j.payload.deliveryIds.filter((id) => put.has(id)) },
        }))
        .filter((j) => j.payload.deliveryIds.length > 0);
      await writeMessage(tx, queued);
      if (put.size > 0)
        await emit(
          tx,
          "webhook.resent",
          { id: subscriptionId, workspaceId: asker.workspaceId, deliveryIds: [...put], updatedAt: now },
          asker.by,
        );
      return [...put];
    });
  };

/**
 * Resend and recover (docs/api/webhooks.md §Resend and recover): a new
 * series of attempts of deliveries that are not pending, each queued under a
 * job of its own (`subject`: where a subscription's jobs go, as at the fan-out).
 */
export function resendStore(sql: Sql, subject: (subscriptionId: string) => string, emit: EmitResent) {
  const requeue = requeuer(sql, subject, emit);
  /** One delivery of the subscription, or undefined. */
  async function one(subscriptionId: string, id: string): Promise<DeliveryRecord | undefined> {
    const [row] = await sql<DeliveryRecord[]>`
      select ${columns(sql)} from deliveries where id = ${id} and subscription_id = ${subscriptionId}`;
    return row;
  }

  return {
    one,

    /**
     * Resend: a new series of attempts of one delivery of the subscription.
     * Answers the delivery as it is now, "pending" when it was pending
     * already or its subscription is not active, or undefined when it is
     * not the subscription's.
     */
    async resend(
      subscriptionId: string,
      deliveryId: string,
      now: Date,
      asker: Asker,
    ): Promise<DeliveryRecord | "pending" | undefined> {
      const put = await requeue(subscriptionId, [deliveryId], now, asker);
      const row = await one(subscriptionId, deliveryId);
      if (!row) return undefined;
      return put.length === 1 ? row : "pending";
    },

    /**
     * Recover: a new series of attempts of the subscription's dead
     * deliveries created within [since, until), oldest first, `limit` at
     * most; the rest of the window is counted and where it starts is said.
     */
    async recover(
      subscriptionId: string,
      since: Date,
      until: Date,
      now: Date,
      limit: number,
      asker: Asker,
    ): Promise<Recovered> {
      const dead = await sql<{ id: string; createdAt: Date }[]>`
        select id, created_at from deliveries
        where subscription_id = ${subscriptionId} and status = 'dead'
          and created_at >= ${since} and created_at < ${until}
        order by created_at, id limit ${limit + 1}`;
      const rest = dead[limit];
      const ids = dead.slice(0, limit).map((d) => d.id);
      const put = await requeue(subscriptionId, ids, now, asker);
      if (!rest) return { queued: put.length, notQueued: 0, nextSince: null };
      const [left] = await sql<{ n: number }[]>`
        select count(*)::int as n from deliveries
        where subscription_id = ${subscriptionId} and status = 'dead'
          and created_at >= ${rest.createdAt} and created_at < ${until}`;
      return { queued: put.length, notQueued: left?.n ?? 0, nextSince: rest.createdAt };
    },
  };
}
export type ResendStore = ReturnType<typeof resendStore>;
