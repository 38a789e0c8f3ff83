import {
  coalescedByKey,
  type EventEnvelope,
  inBatches,
  newId,
  type Sql,
  SYSTEM,
  type TransactionSql,
  writeMessage,
} from "@funil/db";
import type { AttemptResult, Next } from "../schedule.js";
import type { SubscriptionRecord } from "../subscriptions.js";
import { erasedBodies } from "./erasures.js";
import { appendEvents, type StreamEvent } from "./event-log.js";
import { type EmitSubscriptionEvent, columns as subscriptionColumns } from "./subscriptions.js";

/** A delivery as the API shows it (docs/api/webhooks.md §Delivery). */
export interface DeliveryRecord {
  id: string;
  subscriptionId: string;
  event: string;
  status: "pending" | "delivered" | "dead";
  attempts: number;
  responseStatus: number | null;
  lastError: string | null;
  lastAttemptAt: Date | null;
  createdAt: Date;
}

/** What an attempt needs, read as it starts (readDue). */
export interface DueDelivery {
  id: string;
  subscriptionId: string;
  workspaceId: string;
  event: string;
  body: string;
  attempts: number;
  /** The attempts made before the current series (a resend or a recover starts one). */
  retryFrom: number;
  /** The job that owns the delivery since a resend or a recover; null: its fan-out's. */
  queuedJob: string | null;
  url: string;
  keyId: string;
  active: boolean;
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
}

/** What became of a delivery: final (delivered, dead or gone), or due again in `waitMs`. */
export type Outcome = { final: true } | { final: false; waitMs: number };

const FANOUT = "fanout";
const columns = (sql: Sql) =>
  sql`id, subscription_id, event, status, attempts, response_status, last_error, last_attempt_at, created_at`;

/** The body of every attempt of a delivery (docs/api/webhooks.md §What a receiver gets), fixed when the event is fanned out. */
export const deliveryBody = (e: EventEnvelope) =>
  JSON.stringify({
    id: e.id,
    type: e.type,
    createdAt: e.occurredAt,
    workspaceId: e.workspaceId,
    data: e.data,
  });

/**
 * The job a delivery goes in: one per subscription, and per trace for the events that were sampled, so
 * that each attempt continues its own event's trace (webhooks events/attempt-span.ts). The deliveries of
 * events not sampled share a job, which carries one of their contexts on: the sender keeps the decision.
 */
function jobKey(subscriptionId: string, traceparent: string | undefined): string {
  return traceparent !== undefined && sampledFlag(traceparent)
    ? `${subscriptionId} ${traceparent}`
    : subscriptionId;
}

/** Whether a W3C traceparent's flags (its last field) say sampled. */
const sampledFlag = (traceparent: string) => (Number.parseInt(traceparent.slice(-2), 16) & 1) === 1;

/** Deliveries in one job at most: a job is worked on as a whole, acknowledged when all are done. */
export const JOB_SIZE = 64;

/** An attempt as the log keeps it: when its POST went out, how long it took, what came back. */
export interface AttemptLog {
  at: Date;
  durationMs: number;
  body?: string | undefined;
}

type Job = {
  id: string;
  subject: string;
  payload: { job: string; deliveryIds: string[] };
  traceparent?: string | undefined;
};

/**
 * The jobs of new deliveries: one per subscription (up to JOB_SIZE
 * deliveries each), on the subscription's subject, so that a burst of
 * events costs the bus a message per subscription rather than per delivery.
 * A sampled event's deliveries go in jobs of their own, carrying its trace
 * (jobKey).
 */
export function jobsOf(
  subject: (subscriptionId: string) => string,
  created: Array<{ id: string; subscriptionId: string; traceparent?: string | undefined }>,
  now: Date,
): Job[] {
  const bySubscription = new Map<string, { subscriptionId: string; traceparent?: string; ids: string[] }>();
  for (const d of created) {
    const key = jobKey(d.subscriptionId, d.traceparent);
    const group = bySubscription.get(key);
    if (group) group.ids.push(d.id);
    else
      bySubscription.set(key, { subscriptionId: d.subscriptionId, traceparent: d.traceparent, ids: [d.id] });
  }
  const jobs: Job[] = [];
  for (const { subscriptionId, traceparent, ids } of bySubscription.values())
    for (let i = 0; i < ids.length; i += JOB_SIZE) {
      const job = newId("job", now.getTime());
      jobs.push({
        id: job,
        subject: subject(subscriptionId),
        payload: { job, deliveryIds: ids.slice(i, i + JOB_SIZE) },
        traceparent,
      });
    }
  return jobs;
}

/** Deliveries made from events, and swept once they are over. */
function fanOutAndSweep(sql: Sql, subject: (subscriptionId: string) => string) {
  return {
    /**
     * One delivery per active subscription of the workspace to the event's
     * type that existed when it occurred, each with its job, once per event
     * (the inbox) and once per subscription and event (the unique key), also
     * when the event comes twice or two copies handle it at once.
     * Each new event goes to the event log in the same transaction.
     * Many events in one transaction of five statements, whatever their
     * workspaces and types: all of them or none. Returns how many deliveries
     * it created.
     */
    async fanOut(
      events: StreamEvent[],
      now: Date,
      traceparents: Array<string | undefined> = [],
    ): Promise<number> {
      if (events.length === 0) return 0;
      return sql.begin(async (tx) => {
        // Cached plans here (the pool plans every statement afresh, server.ts): none of these statements
        // scans deliveries (its conflicts go through the unique index whatever the plan), and planning the
        // insert for its hundreds of array elements at every fan-out is a cost per delivery that a kept
        // plan saves (bench/RESULTS-webhooks.md).
        await tx`set local plan_cache_mode = auto`;
        // The same event twice in one batch (a redelivery) is fanned out once; ids in order, so two copies
        // of the service inserting overlapping batches wait for each other instead of deadlocking.
        const fresh = new Set(
          (
            await tx<{ messageId: string }[]>`
              insert into inbox (consumer, message_id)
              select ${FANOUT}, m from unnest(${[...new Set(events.map((e) => e.id))].sort()}::text[]) as m
              on conflict do nothing returning message_id`
          ).map((r) => r.messageId),
        );
        const todo = events.filter((e) => fresh.delete(e.id));
        if (todo.length === 0) return 0;
        // The bodies (erasures.ts: redacted for a contact erased before) are read in the same round trip
        // as the subscriptions that match; the log and the deliveries keep the same bodies.
        const [matches, bodies] = await Promise.all([
          tx<{ n: number; id: string }[]>`
          select e.n::int as n, s.id
          from unnest(${todo.map((e) => e.workspaceId)}::text[], ${todo.map((e) => e.type)}::text[],
            ${todo.map((e) => new Date(e.occurredAt).toISOString())}::timestamptz[])
            with ordinality as e(workspace_id, type, occurred_at, n)
          join subscriptions s on s.workspace_id = e.workspace_id and s.active
            and s.events @> array[e.type] and s.created_at <= e.occurred_at
          for key share of s`,
          erasedBodies(tx, todo, todo.map(deliveryBody)),
        ]);
        await appendEvents(tx, todo, bodies);
        if (matches.length === 0) return 0;
        // Each event's fields and body are sent once, however many subscriptions it goes to. Nothing is
        // returned: the ids are made here, and one that met the unique key (the event came back after its
        // inbox row was gone) is queued all the same, found gone by its attempt and dropped.
        const traceOf = traceparents.length === 0 ? [] : todo.map((e) => traceparents[events.indexOf(e)]);
        const created = matches.map((m) => ({
          id: newId("dlv", now.getTime()),
          subscriptionId: m.id,
          traceparent: traceOf[m.n - 1],
        }));
        const inserted = await tx`
          insert into deliveries (id, subscription_id, workspace_id, event_id, event, body, created_at)
          select d.id, d.sub, e.workspace_id, e.event_id, e.event, e.body, ${now}
          from unnest(${created.map((c) => c.id)}::text[],
            ${matches.map((m) => m.id)}::text[], ${matches.map((m) => m.n)}::int[]) as d(id, sub, n)
          join unnest(${todo.map((e) => e.workspaceId)}::text[], ${todo.map((e) => e.id)}::text[],
            ${todo.map((e) => e.type)}::text[], ${bodies}::text[])
            with ordinality as e(workspace_id, event_id, event, body, n) using (n)
          on conflict (subscription_id, event_id) do nothing`;
        await writeMessage(tx, jobsOf(subject, created, now));
        return inserted.count;
      });
    },

    /**
     * The deliveries that are over (delivered or dead) and were created before `before` go, `batch` at a
     * time; a pending one stays whatever its age. Each subscription's are found through its
     * deliveries_recent index, so the sweep needs no index of its own on the insert path.
     */
    async sweep(before: Date, batch = 5000): Promise<number> {
      return inBatches(async (limit) => {
        const rows = await sql`
          delete from deliveries where id = any(array(
            select d.id from subscriptions s cross join lateral (
              select id from deliveries
              where subscription_id = s.id and created_at < ${before} and status <> 'pending'
              limit ${limit}) d
            limit ${limit}))`;
        return rows.count;
      }, batch);
    },
  };
}

/** A subscription's recent deliveries, and the deliveries of held jobs as their attempts start. */
function deliveryReads(sql: Sql) {
  return {
    /**
     * The 50 most recent deliveries of a subscription (docs/api/webhooks.md §GET /webhooks/{id}/deliveries;
     * docs/api/conventions.md §Limits); the lists of one subscription asked in the same turn share the
     * statement and its rows (coalescedByKey: read only).
     */
    recent: coalescedByKey(
      (subscriptionId: string) => sql<DeliveryRecord[]>`
        select ${columns(sql)} from deliveries where subscription_id = ${subscriptionId}
        order by created_at desc, id desc limit 50`,
    ),

    /**
     * The deliveries of held jobs as their attempts start, in one read:
     * each one pending and due is answered with what its attempt needs, read
     * now (a subscription deactivated, a URL changed or a secret rotated
     * since its job came is seen); the others with final (delivered, dead or
     * gone) or with how long until they are due. An id asked twice in one
     * batch is answered once; its second asker waits a lease.
     */
    async readDue(ids: string[], now: Date, leaseMs: number): Promise<Array<DueDelivery | Outcome>> {
      const rows = await sql<(DueDelivery & { status: string; nextAttemptAt: Date | null })[]>`
        select d.id, d.subscription_id, d.workspace_id, d.event, d.body, d.attempts, d.retry_from, d.queued_job, d.status,
          d.next_attempt_at, s.url, s.key_id,
          s.active, s.secret, s.previous_secret, s.previous_secret_until
        from deliveries d join subscriptions s on s.id = d.subscription_id
        where d.id = any(${ids}::text[])`;
      const found = new Map(rows.map((r) => [r.id, r]));
      const answered = new Set<string>();
      return ids.map((id): DueDelivery | Outcome => {
        const row = found.get(id);
        if (row?.status !== "pending") return { final: true };
        if (answered.has(id)) return { final: false, waitMs: leaseMs };
        answered.add(id);
        const due = row.nextAttemptAt?.getTime() ?? 0;
        if (due > now.getTime()) return { final: false, waitMs: due - now.getTime() };
        return row; // a DueDelivery, with its status and due time besides (not copied: one less object per attempt)
      });
    },
  };
}

/** The leases that keep a job to one holder while its deliveries are attempted. */
function jobLeases(sql: Sql) {
  return {
    /**
     * Takes the leases of jobs for `holder` until `until`: a job is granted
     * when no one holds it or its lease ran out. Answers job by job whether
     * it was granted.
     */
    async leaseJobs(jobIds: string[], holder: string, now: Date, until: Date): Promise<boolean[]> {
      const granted = new Set(
        (
          await sql<{ jobId: string }[]>`
            insert into job_leases (job_id, holder, lease_until)
            select j, ${holder}, ${until} from unnest(${[...new Set(jobIds)].sort()}::text[]) as j
            on conflict (job_id) do update set holder = excluded.holder, lease_until = excluded.lease_until
              where job_leases.lease_until <= ${now}
            returning job_id`
        ).map((r) => r.jobId),
      );
      // A job asked twice in one batch is granted to its first asker only.
      return jobIds.map((id) => granted.delete(id));
    },

    /** Holds `holder`'s jobs on until `until` (while their deliveries wait for slots or attempts run). */
    async extendJobs(jobIds: string[], holder: string, until: Date): Promise<void> {
      if (jobIds.length === 0) return;
      await sql`update job_leases set lease_until = ${until}
        where job_id = any(${jobIds}::text[]) and holder = ${holder}`;
    },

    /** Gives up `holder`'s jobs: done (acked) or handed back until their next retry (nak). */
    async releaseJobs(jobIds: string[], holder: string): Promise<void> {
      if (jobIds.length === 0) return;
      await sql`delete from job_leases where job_id = any(${jobIds}::text[]) and holder = ${holder}`;
    },
  };
}

/** What an attempt ends in: delivered, retried, dead, or its subscription deactivated. */
function attemptOutcomes(sql: Sql, events: EmitSubscriptionEvent) {
  /**
   * Every still-pending delivery of a subscription ends dead (breaker, scope
   * revoked). It reads the subscription's deliveries through deliveries_recent:
   * no index on status, so that every read of an attempt finds its rows by primary key
   * (migrations/00002_claim_plan.sql).
   */
  const killPending = (tx: TransactionSql, subscriptionId: string, reason: string) => tx`
    update deliveries set status = 'dead', last_error = coalesce(last_error, ${reason}),
      next_attempt_at = null
    where subscription_id = ${subscriptionId} and status = 'pending'`;

  /** The sender's own change of a subscription, in GET /audit as the system's (docs/api/events.md §Who made a change). */
  async function deactivate(tx: TransactionSql, subscriptionId: string, reason: string, now: Date) {
    const [sub] = await tx<SubscriptionRecord[]>`
      update subscriptions set active = false, disabled_reason = ${reason}, updated_at = ${now}
      where id = ${subscriptionId} returning ${subscriptionColumns(sql)}`;
    if (sub) await events(tx, "webhook.updated", sub, SYSTEM, DEACTIVATED);
  }

  /**
   * Successful attempts, in one statement (atomic as a whole): each
   * delivery delivered, and its subscription's breaker clock cleared.
   */
  async function recordDelivered(
    done: Array<{ delivery: DueDelivery; status: number; at: Date; attempt: AttemptLog }>,
  ): Promise<void> {
    if (done.length === 0) return;
    const now = new Date(Math.max(...done.map((d) => d.at.getTime())));
    const log = done.map((d) => d.attempt);
    await sql`
      with healthy as (
        update subscriptions set failing_since = null, updated_at = ${now}
        where id = any(${[...new Set(done.map((d) => d.delivery.subscriptionId))]}::text[])
          and failing_since is not null),
      logged as (
        insert into attempts (id, delivery_id, subscription_id, workspace_id, event, at, succeeded,
          response_status, duration_ms, response_body)
        select a.id, a.delivery_id, a.subscription_id, a.workspace_id, a.event, a.at, true, a.status, a.ms, a.body
        from unnest(${log.map((l) => newId("att", l.at.getTime()))}::text[], ${done.map((d) => d.delivery.id)}::text[],
          ${done.map((d) => d.delivery.subscriptionId)}::text[], ${done.map((d) => d.delivery.workspaceId)}::text[],
          ${done.map((d) => d.delivery.event)}::text[], ${log.map((l) => l.at.toISOString())}::timestamptz[],
          ${done.map((d) => d.status)}::int[], ${log.map((l) => l.durationMs)}::int[],
          ${log.map((l) => l.body ?? null)}::text[])
          as a(id, delivery_id, subscription_id, workspace_id, event, at, status, ms, body))
      update deliveries set status = 'delivered', attempts = a.attempts, response_status = a.status,
        last_error = null, last_attempt_at = a.at, next_attempt_at = null
      from unnest(${done.map((d) => d.delivery.id)}::text[], ${done.map((d) => d.delivery.attempts + 1)}::int[],
        ${done.map((d) => d.status)}::int[], ${done.map((d) => d.at.toISOString())}::timestamptz[]) as a(id, attempts, status, at)
      where deliveries.id = a.id`;
  }

  return {
    /**
     * The outcome of attempt `attempts`, in one transaction with its
     * subscription: success clears the breaker's clock; a failure starts it
     * and `decide` (schedule.ts) says what comes next, given since when the
     * subscription fails. Written before the job is acknowledged.
     */
    async record(
      delivery: DueDelivery,
      result: AttemptResult,
      now: Date,
      decide: (failingSince: Date) => Next,
      log: AttemptLog,
    ): Promise<Next> {
      const attempt = {
        attempts: delivery.attempts + 1,
        response_status: result.status ?? null,
        last_error: result.ok ? null : (result.error ?? "failed"),
        last_attempt_at: now,
      };
      if (result.ok) {
        await recordDelivered([{ delivery, status: result.status ?? 200, at: now, attempt: log }]);
        return { status: "delivered" };
      }
      return sql.begin(async (tx) => {
        await tx`insert into attempts ${tx({
          id: newId("att", log.at.getTime()),
          delivery_id: delivery.id,
          subscription_id: delivery.subscriptionId,
          workspace_id: delivery.workspaceId,
          event: delivery.event,
          at: log.at,
          succeeded: false,
          response_status: result.status ?? null,
          duration_ms: log.durationMs,
          response_body: log.body ?? null,
          error: result.error ?? "failed",
        })}`;
        const [sub] = await tx<{ failingSince: Date }[]>`
          update subscriptions set failing_since = coalesce(failing_since, ${now}),
            updated_at = case when failing_since is null then ${now} else updated_at end
          where id = ${delivery.subscriptionId} returning failing_since`;
        const next = decide(sub?.failingSince ?? now);
        await tx`update deliveries set ${tx({
          ...attempt,
          status: next.status,
          next_attempt_at: next.status === "pending" ? new Date(now.getTime() + next.retryInMs) : null,
        })} where id = ${delivery.id}`;
        if (next.status === "dead" && next.breaker) {
          await deactivate(tx, delivery.subscriptionId, "circuit_breaker", now);
          await killPending(tx, delivery.subscriptionId, "circuit_breaker: the subscription was deactivated");
        }
        return next;
      });
    },

    /** Successful attempts, in one statement (see recordDelivered). */
    recordDelivered,

    /**
     * The subscription's key lost the event's read scope or was revoked
     * (docs/api/webhooks.md §Scope revoked): deactivated (scope_revoked), its pending deliveries dead.
     */
    async revokeScope(delivery: DueDelivery, reason: string, now: Date): Promise<void> {
      await sql.begin(async (tx) => {
        await tx`update deliveries set last_error = ${reason} where id = ${delivery.id}`;
        await deactivate(tx, delivery.subscriptionId, "scope_revoked", now);
        await killPending(tx, delivery.subscriptionId, reason);
      });
    },

    /** A job of a deactivated subscription: its delivery ends dead, unsent. */
    async abandon(delivery: DueDelivery): Promise<void> {
      await sql`update deliveries set status = 'dead', next_attempt_at = null,
        last_error = coalesce(last_error, 'the subscription is not active') where id = ${delivery.id}`;
    },
  };
}

/** What a deactivation by the sender changes. */
const DEACTIVATED = ["active", "disabledReason"];

/** `events`: where the sender's own changes of a subscription (a deactivation) are written. */
export function deliveryStore(
  sql: Sql,
  subject: (subscriptionId: string) => string,
  events: EmitSubscriptionEvent,
) {
  return {
    ...fanOutAndSweep(sql, subject),
    ...deliveryReads(sql),
    ...jobLeases(sql),
    ...attemptOutcomes(sql, events),
  };
}

export type DeliveryStore = ReturnType<typeof deliveryStore>;
