import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql, writeEvent } from "@funil/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planOf } from "../../../../tests/plans.js";
import { migrations, subscriptionEvents } from "../server.js";
import { deliveryStore } from "./deliveries.js";
import { eventLogStore, type StreamEvent } from "./event-log.js";

/** The event log on the real test database, written by the fan-out's transaction (docs/api/events.md §Catch-up: GET /events). */
const names = naming(`${process.env.FUNIL_TEST_ENV}_eventlog`);
const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let sql: Sql;
let deliveries: ReturnType<typeof deliveryStore>;
let log: ReturnType<typeof eventLogStore>;
const day = 86_400_000;
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);
const ALL = ["contact.created", "contact.updated", "meeting.booked"];

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("webhooks"),
  );
  await migrate(sql, migrations);
  deliveries = deliveryStore(
    sql,
    (id) => names.subject(`webhook.deliveries.${id}`),
    subscriptionEvents(async (tx, e) => {
      await writeEvent(tx, (t) => names.subject(`events.${t}`), e);
    }),
  );
  log = eventLogStore(sql);
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

let n = 0;
const event = (workspaceId: string, seq: number, type = "contact.created", occurredAt = at(1_000)) =>
  ({
    id: `evt_${workspaceId}_${seq}_${++n}`,
    type,
    workspaceId,
    occurredAt: occurredAt.toISOString(),
    data: { id: `ct_${seq}`, name: "Maria" },
    seq,
  }) satisfies StreamEvent;

describe("the event log", () => {
  it("docs/api/events.md §Catch-up: GET /events: each event once, in stream order, whatever order and how often the fan-out writes it", async () => {
    const ws = `ws_log${Date.now()}`;
    const [e1, e2, e3, e4] = [event(ws, 101), event(ws, 102), event(ws, 103), event(ws, 104)];
    // Written out of order, in parallel batches, one of them twice and once again later (a redelivery).
    await Promise.all([
      deliveries.fanOut([e3!, e1!], at(2_000)),
      deliveries.fanOut([e4!, e2!, e4!], at(2_000)),
    ]);
    await deliveries.fanOut([e1!, e2!], at(3_000));
    const rows = await log.list(ws, ALL, 0, Number.MAX_SAFE_INTEGER, 10);
    expect(rows.map((r) => r.id)).toEqual([e1!.id, e2!.id, e3!.id, e4!.id]);
    expect(rows.map((r) => r.seq)).toEqual([101, 102, 103, 104]);
    // The envelope a webhook receiver gets, byte for byte.
    expect(JSON.parse(rows[0]!.body)).toEqual({
      id: e1!.id,
      type: "contact.created",
      createdAt: e1!.occurredAt,
      workspaceId: ws,
      data: e1!.data,
    });
  });

  it("docs/api/events.md §Catch-up: GET /events: after a position, up to where the log is complete, of the types asked, of one workspace", async () => {
    const ws = `ws_log${Date.now()}b`;
    const other = `${ws}_other`;
    const mine = [
      event(ws, 201),
      event(ws, 202, "meeting.booked"),
      event(ws, 203, "contact.updated"),
      event(ws, 205),
    ];
    await deliveries.fanOut([...mine, event(other, 204)], at(2_000));
    const ids = async (types: string[], after: number, upTo: number, take = 10) =>
      (await log.list(ws, types, after, upTo, take)).map((r) => r.id);
    expect(await ids(ALL, 201, 1_000)).toEqual([mine[1]!.id, mine[2]!.id, mine[3]!.id]);
    expect(await ids(ALL, 201, 203)).toEqual([mine[1]!.id, mine[2]!.id]);
    expect(await ids(["contact.created", "contact.updated"], 0, 1_000)).toEqual([
      mine[0]!.id,
      mine[2]!.id,
      mine[3]!.id,
    ]);
    expect(await ids(ALL, 0, 1_000, 2)).toEqual([mine[0]!.id, mine[1]!.id]);
    expect(await log.seqOf(ws, mine[2]!.id)).toBe(203);
    expect(await log.seqOf(other, mine[2]!.id)).toBeUndefined();
    expect(await log.seqOf(ws, "evt_never")).toBeUndefined();
  });

  it("docs/operations.md §Retention: events that occurred more than EVENT_LOG_RETENTION_DAYS ago are swept, batch by batch; newer ones stay", async () => {
    const ws = `ws_log${Date.now()}c`;
    const old = [1, 2, 3, 4, 5].map((i) => event(ws, 300 + i, "contact.created", at(i)));
    const recent = event(ws, 310, "contact.created", at(40 * day));
    await deliveries.fanOut([...old, recent], at(40 * day));
    // The sweep is the whole table's: the other tests' events (January 2026) go too.
    expect(await log.sweep(at(10 * day), 2)).toBeGreaterThanOrEqual(5);
    expect((await log.list(ws, ALL, 0, Number.MAX_SAFE_INTEGER, 10)).map((r) => r.id)).toEqual([recent.id]);
    expect(await log.seqOf(ws, old[0]!.id)).toBeUndefined();
  });

  it("docs/api/events.md §Audit: GET /audit: every event is logged, internal ones too, with its entity, actor, request id and changed field names; one entity's changes are read through event_log_by_entity", async () => {
    const ws = `ws_audit${Date.now()}`;
    const byKey = { actor: { type: "key" as const, id: "key_a" }, requestId: "req-1", changes: ["name"] };
    const created = {
      ...event(ws, 401),
      actor: { type: "admin" as const },
      requestId: "req-0",
      changes: ["name"],
    };
    const renamed = { ...event(ws, 402, "contact.updated"), ...byKey, data: { id: "ct_401", name: "Bia" } };
    const task = { ...event(ws, 403, "task.created"), data: { id: "tsk_1" } };
    const old = { ...event(ws, 404, "contact.updated"), data: { id: "ct_401" } };
    await deliveries.fanOut([created, renamed, task, old, event(`${ws}x`, 405)], at(2_000));
    const rows = await log.audit(ws, { entity: "contact", id: "ct_401" }, 0, 1_000, 10);
    expect(rows.map((r) => [r.type, r.entityType, r.entityId, r.actor, r.requestId, r.changes])).toEqual([
      ["contact.created", "contact", "ct_401", "admin", "req-0", ["name"]],
      ["contact.updated", "contact", "ct_401", "key:key_a", "req-1", ["name"]],
      // An event without an actor (written before envelopes carried one) is the system's.
      ["contact.updated", "contact", "ct_401", "system", null, []],
    ]);
    expect((await log.audit(ws, { entity: "task" }, 0, 1_000, 10)).map((r) => r.id)).toEqual([task.id]);
    expect((await log.audit(ws, {}, 402, 1_000, 10)).map((r) => r.id)).toEqual([task.id, old.id]);
    // GET /events does not list the internal one.
    expect((await log.list(ws, ALL, 0, 1_000, 10)).map((r) => r.id)).toEqual([
      created.id,
      renamed.id,
      old.id,
    ]);
    const { plan } = await planOf(
      `${url.replace(/\/[^/]*$/, "")}/${names.database("webhooks")}`,
      /from event_log where/,
      (probe: Sql) => eventLogStore(probe).audit(ws, { entity: "contact", id: "ct_401" }, 0, 1_000, 101),
      false,
    );
    expect(plan).toContain("event_log_by_entity");
    expect(plan).not.toMatch(/Seq Scan|Sort/);
  });
});
