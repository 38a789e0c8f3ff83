import { naming } from "@funil/config";
import {
  type EventInput,
  migrate,
  openDatabase,
  type Sql,
  SYSTEM,
  type TransactionSql,
  writeEvent,
} from "@funil/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations, resentEvents, subscriptionEvents } from "../server.js";
import { attemptStore } from "./attempts.js";
import { deliveryStore } from "./deliveries.js";
import { resendStore } from "./resend.js";
import { subscriptionStore } from "./subscriptions.js";

/** The job leases on the real test database: one sender at a time works on a job (docs/api/webhooks.md §Retries). */
const names = naming(`${process.env.FUNIL_TEST_ENV}_leases`);
let sql: Sql;
let store: ReturnType<typeof deliveryStore>;
let resends: ReturnType<typeof resendStore>;
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);
/** A subscription's events go to the outbox, as the service's do. */
const emit = async (tx: TransactionSql, e: EventInput) => {
  await writeEvent(tx, (t) => names.subject(`events.${t}`), e);
};
const events = subscriptionEvents(emit);
const subscriptionsOf = (sql: Sql) => subscriptionStore(sql, events);
/** Who asks for the resends and recovers of these tests: the system, for a workspace of its own. */
const ASKER = { workspaceId: "ws_resends", by: SYSTEM };

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("webhooks"),
  );
  await migrate(sql, migrations);
  store = deliveryStore(sql, (id) => names.subject(`webhook.deliveries.${id}`), events);
  resends = resendStore(sql, (id) => names.subject(`webhook.deliveries.${id}`), resentEvents(emit));
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describe("job leases", () => {
  it("a job is granted to one holder; again only once released or run out", async () => {
    const job = `job_${Date.now()}`;
    expect(await store.leaseJobs([job, job], "a", at(0), at(10_000))).toEqual([true, false]);
    expect(await store.leaseJobs([job], "b", at(5_000), at(15_000))).toEqual([false]);
    // Held on by its holder; another process cannot hold it on, nor release it.
    await store.extendJobs([job], "a", at(20_000));
    await store.extendJobs([job], "b", at(1));
    await store.releaseJobs([job], "b");
    expect(await store.leaseJobs([job], "b", at(15_000), at(25_000))).toEqual([false]);
    // Run out: the next asker takes it over.
    expect(await store.leaseJobs([job], "b", at(20_000), at(30_000))).toEqual([true]);
    await store.releaseJobs([job], "a");
    expect(await store.leaseJobs([job], "c", at(21_000), at(31_000))).toEqual([false]);
    await store.releaseJobs([job], "b");
    expect(await store.leaseJobs([job], "c", at(21_000), at(31_000))).toEqual([true]);
  });

  it("a delivery that is gone is final: its job is done with it", async () => {
    expect(await store.readDue(["dlv_missing"], at(0), 1_000)).toEqual([{ final: true }]);
  });
});

describe("a subscription's deliveries", () => {
  it("API §11: DELETE takes its deliveries with it, also those of fan-outs racing with it; none is left behind", async () => {
    const subscriptions = subscriptionsOf(sql);
    const workspaceId = `ws_${Date.now()}`;
    const event = (i: number) => ({
      id: `evt_${workspaceId}_${i}`,
      type: "contact.created",
      workspaceId,
      occurredAt: at(1_000).toISOString(),
      data: { id: `ct_${i}` },
      seq: i,
    });
    for (let round = 0; round < 5; round++) {
      const { id } = await subscriptions.create(
        workspaceId,
        { keyId: "key_x", url: "https://example.com/hook", events: ["contact.created"], description: null },
        "whsec_test",
        at(0),
        SYSTEM,
      );
      expect(await store.fanOut([event(round * 100)], at(2_000))).toBe(1);
      // Fan-outs of new events race with the delete: each either commits before it (and is deleted with
      // the subscription) or finds the subscription gone.
      const [, removed] = await Promise.all([
        Promise.all(
          Array.from({ length: 4 }, (_, i) => store.fanOut([event(round * 100 + 1 + i)], at(2_000))),
        ),
        subscriptions.remove(workspaceId, id, at(3_000), SYSTEM),
      ]);
      expect(removed).toBe(true);
      const [row] = await sql<{ left: number }[]>`
        select count(*)::int as left from deliveries where subscription_id = ${id}`;
      expect(row?.left).toBe(0);
    }
  });
});

describe("resend and recover (docs/api/webhooks.md §Resend and recover)", () => {
  async function deadDeliveries(n: number) {
    const workspaceId = `ws_r${Date.now()}${Math.random().toString(36).slice(2, 6)}`;
    const sub = await subscriptionsOf(sql).create(
      workspaceId,
      { keyId: "key_x", url: "https://example.com/hook", events: ["contact.created"], description: null },
      "whsec_test",
      at(0),
      SYSTEM,
    );
    const events = Array.from({ length: n }, (_, i) => ({
      id: `evt_${workspaceId}_${i}`,
      type: "contact.created",
      workspaceId,
      occurredAt: at(1_000).toISOString(),
      data: { id: `ct_${i}` },
      seq: i,
    }));
    for (const [i, e] of events.entries()) await store.fanOut([e], at(2_000 + i));
    await sql`update deliveries set status = 'dead', attempts = 6 where subscription_id = ${sub.id}`;
    return sub.id;
  }

  it("recover is bounded per call: what it left is counted, and the next call from nextSince queues it, never twice", async () => {
    const subscriptionId = await deadDeliveries(5);
    const first = await resends.recover(subscriptionId, at(0), at(60_000), at(70_000), 2, ASKER);
    expect(first).toEqual({ queued: 2, notQueued: 3, nextSince: at(2_002) });
    const second = await resends.recover(subscriptionId, first.nextSince!, at(60_000), at(70_000), 2, ASKER);
    expect(second).toEqual({ queued: 2, notQueued: 1, nextSince: at(2_004) });
    // The same window again: the ones queued are pending, not queued a second time.
    expect(await resends.recover(subscriptionId, at(0), at(60_000), at(70_000), 10, ASKER)).toEqual({
      queued: 1,
      notQueued: 0,
      nextSince: null,
    });
    const rows = await sql<{ status: string; attempts: number; retryFrom: number; queuedJob: string }[]>`
      select status, attempts, retry_from, queued_job from deliveries where subscription_id = ${subscriptionId}`;
    expect(rows.every((r) => r.status === "pending" && r.retryFrom === 6 && r.queuedJob)).toBe(true);
    // Each call queued its deliveries under a job of its own.
    const jobs = new Set(rows.map((r) => r.queuedJob));
    expect(jobs.size).toBe(3);
  });

  it("a delivery given to a new job is not the old job's: readDue tells the sender which job owns it", async () => {
    const subscriptionId = await deadDeliveries(1);
    const [row] = await sql<
      { id: string }[]
    >`select id from deliveries where subscription_id = ${subscriptionId}`;
    const id = row!.id;
    const resent = await resends.resend(subscriptionId, id, at(80_000), ASKER);
    expect(resent).toMatchObject({ id, status: "pending", attempts: 6 });
    const [due] = await store.readDue([id], at(80_000), 1_000);
    expect(due).toMatchObject({ id, retryFrom: 6, queuedJob: expect.stringMatching(/^job_/) });
    // Pending already: a second resend queues nothing.
    expect(await resends.resend(subscriptionId, id, at(80_001), ASKER)).toBe("pending");
    // Not the subscription's: nothing.
    expect(await resends.resend("wh_other", id, at(80_002), ASKER)).toBeUndefined();
  });

  it("a subscription that is not active gets nothing queued", async () => {
    const subscriptionId = await deadDeliveries(2);
    await sql`update subscriptions set active = false where id = ${subscriptionId}`;
    expect(await resends.recover(subscriptionId, at(0), at(60_000), at(70_000), 10, ASKER)).toMatchObject({
      queued: 0,
    });
  });
});

describe("the attempt log's retention (docs/api/webhooks.md §Attempt log)", () => {
  it("the sweep deletes the attempts older than the retention, in batches, and keeps the others", async () => {
    const subscriptionId = `wh_sweep${Date.now()}`;
    const row = (i: number, at: Date) => ({
      id: `att_${subscriptionId}_${i}`,
      delivery_id: "dlv_x",
      subscription_id: subscriptionId,
      workspace_id: "ws_sweep",
      event: "contact.created",
      at,
      succeeded: true,
      duration_ms: 1,
    });
    const old = Array.from({ length: 5 }, (_, i) => row(i, at(-40 * 86_400_000 + i)));
    const rows = [...old, row(9, at(0))];
    await sql`insert into attempts ${sql(rows as [(typeof rows)[0], ...typeof rows])}`;
    expect(await attemptStore(sql).sweep(at(-30 * 86_400_000), 2)).toBeGreaterThanOrEqual(5);
    const left = await sql<
      { id: string }[]
    >`select id from attempts where subscription_id = ${subscriptionId}`;
    expect(left.map((r) => r.id)).toEqual([`att_${subscriptionId}_9`]);
  });
});

describe("a fan-out's jobs and traces", () => {
  it("each sampled event's deliveries leave in a job carrying its own trace context; the unsampled share one that carries their decision", async () => {
    const subscriptions = subscriptionsOf(sql);
    const workspaceId = `ws_traced_${Date.now()}`;
    const { id } = await subscriptions.create(
      workspaceId,
      { keyId: "key_x", url: "https://example.com/hook", events: ["contact.created"], description: null },
      "whsec_test",
      at(0),
      SYSTEM,
    );
    const events = [1, 2, 3, 4].map((i) => ({
      id: `evt_${workspaceId}_${i}`,
      type: "contact.created",
      workspaceId,
      occurredAt: at(1_000).toISOString(),
      data: { id: `ct_${i}` },
      seq: i,
    }));
    const context = (trace: string, flags: string) => `00-${trace.repeat(32)}-${"b".repeat(16)}-${flags}`;
    const traceparents = [context("1", "01"), context("2", "01"), context("3", "00"), context("4", "00")];
    expect(await store.fanOut(events, at(2_000), traceparents)).toBe(4);
    const jobs = await sql<{ traceparent: string | null; events: string[] }[]>`
      select o.traceparent, array_agg(d.event_id order by d.event_id) as events
      from outbox o cross join jsonb_array_elements_text(o.envelope->'deliveryIds') as j(delivery_id)
      join deliveries d on d.id = j.delivery_id
      where o.subject = ${names.subject(`webhook.deliveries.${id}`)}
      group by o.id, o.traceparent order by o.traceparent`;
    expect(jobs.slice(0, 2)).toEqual([
      { traceparent: traceparents[0], events: [events[0]!.id] },
      { traceparent: traceparents[1], events: [events[1]!.id] },
    ]);
    expect(jobs[2]?.events).toEqual([events[2]!.id, events[3]!.id]);
    expect(traceparents.slice(2)).toContain(jobs[2]?.traceparent);
    expect(jobs).toHaveLength(3);
  });
});

describe("the deliveries' retention (docs/operations.md §Retention: WEBHOOK_DELIVERY_RETENTION_DAYS)", () => {
  it("the sweep deletes the deliveries that are over and older than the retention, in batches; pending ones and recent ones stay", async () => {
    const workspaceId = `ws_keep${Date.now()}`;
    const sub = await subscriptionsOf(sql).create(
      workspaceId,
      { keyId: "key_x", url: "https://example.com/hook", events: ["contact.created"], description: null },
      "whsec_test",
      at(0),
      SYSTEM,
    );
    const event = (i: number) => ({
      id: `evt_${workspaceId}_${i}`,
      type: "contact.created",
      workspaceId,
      occurredAt: at(1_000).toISOString(),
      data: { id: `ct_${i}` },
      seq: i,
    });
    const day = 86_400_000;
    // Six fanned out 40 days before the sweep: two delivered, three dead, one still pending; one recent.
    for (let i = 0; i < 6; i++) await store.fanOut([event(i)], at(2_000 + i));
    await store.fanOut([event(9)], at(40 * day));
    await sql`
      update deliveries set status = case when event_id like '%\\_0' or event_id like '%\\_1' then 'delivered'
        when event_id like '%\\_5' then 'pending' else 'dead' end
      where subscription_id = ${sub.id} and event_id <> ${event(9).id}`;
    await sql`update deliveries set status = 'delivered' where event_id = ${event(9).id}`;
    // The sweep is the whole table's: the other tests' old deliveries that are over go too.
    expect(await store.sweep(at(10 * day), 2)).toBeGreaterThanOrEqual(5);
    const left = await sql<{ eventId: string; status: string }[]>`
      select event_id, status from deliveries where subscription_id = ${sub.id} order by event_id`;
    expect(left).toEqual([
      { eventId: event(5).id, status: "pending" },
      { eventId: event(9).id, status: "delivered" },
    ]);
  });
});
