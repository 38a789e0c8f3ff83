import { connectBus, ensureStreams, type NatsConnection } from "@funil/bus";
import { naming } from "@funil/config";
import { migrate, openDatabase, postgres, type Sql } from "@funil/db";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations, timelineDeps } from "../server.js";
import { startConsumers } from "./consumers.js";

/**
 * The consumers on a real database and a real NATS, with streams of their
 * own: a database outage is retried (nak with a delay), never acknowledged
 * away, and every message is stored once the database is back.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_tlconsumers`);
const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = names.database("timeline");
let sql: Sql;
let admin: Sql;
let nc: NatsConnection;

beforeAll(async () => {
  admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${database}" with (force)`);
  sql = await openDatabase(serverUrl, database, { max: 2 });
  await migrate(sql, migrations);
  nc = await connectBus(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "timeline-test");
  const jsm = await jetstreamManager(nc);
  for (const s of ["INGEST", "EVENTS"]) await jsm.streams.delete(names.stream(s)).catch(() => {});
  await ensureStreams(nc, names, ["INGEST", "EVENTS"]);
});
afterAll(async () => {
  await admin?.unsafe(`alter database "${database}" allow_connections true`);
  await sql?.end({ timeout: 5 });
  await admin?.end();
  await nc?.close();
});

describe("ingest consumers (docs/api/interactions.md §Ingest)", () => {
  it("a database outage naks with a delay: nothing is lost, nothing parked, each row stored once", async () => {
    const consumers = await startConsumers({ nc, names, log: pino({ level: "silent" }) }, timelineDeps(sql));
    const js = jetstream(nc);
    const call = (rowId: number) => ({
      workspaceId: "ws_outage",
      rowId,
      contactId: "ct1",
      direction: "outbound",
      userId: "u1",
      startedAt: new Date(Date.UTC(2026, 0, 1, 0, rowId)).toISOString(),
      durationSec: 1,
      status: "answered",
    });
    try {
      // The database goes away: no new connections, the open ones cut.
      await admin.unsafe(`alter database "${database}" allow_connections false`);
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${database}`;
      for (let i = 1; i <= 5; i++) await js.publish(names.subject("ingest.call"), JSON.stringify(call(i)));
      await js.publish(names.subject("ingest.call"), JSON.stringify(call(1))); // a duplicate
      await expect
        .poll(async () => (await consumers[1]!.stats()).redeliveries, { timeout: 10_000 })
        .toBeGreaterThan(0);
      expect((await consumers[1]!.stats()).pending).toBeGreaterThan(0);

      await admin.unsafe(`alter database "${database}" allow_connections true`);
      await expect
        .poll(
          async () => (await sql`select id from interactions order by id`.catch(() => [])).map((r) => r.id),
          {
            timeout: 15_000,
            interval: 200,
          },
        )
        .toEqual(["call:1", "call:2", "call:3", "call:4", "call:5"]);
      const [touch] = await sql`select first_at, last_at from contact_touches where contact_id = 'ct1'`;
      expect(touch).toEqual({
        firstAt: new Date("2026-01-01T00:01:00Z"),
        lastAt: new Date("2026-01-01T00:05:00Z"),
      });
      await expect.poll(async () => (await consumers[1]!.stats()).pending, { timeout: 5000 }).toBe(0);
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
    }
  }, 40_000);

  it("a backlog is stored batch by batch as one at a time would: repeats once, touches and owners whatever the order, a malformed message dead-lettered alone", async () => {
    const ws = "ws_backlog";
    const js = jetstream(nc);
    const since = new Date(Date.now() - 1000);
    const minute = (m: number) => new Date(Date.UTC(2026, 0, 1, 0, m)).toISOString();
    const message = (rowId: number, m: number, extra: object = {}) => ({
      workspaceId: ws,
      rowId,
      channel: "whatsapp",
      direction: "outbound",
      contactId: `ct${rowId % 7}`,
      conversationId: `cv${rowId % 7}`,
      sentAt: minute(m),
      senderUserId: rowId % 2 ? "u1" : undefined,
      ...extra,
    });
    // The backlog waits for the consumers: 500 messages, latest first (out of order), each of the first
    // 100 twice; the conversations' owners assigned newest first; one malformed, one internal marker.
    const sent: object[] = [];
    for (let i = 499; i >= 0; i--) sent.push(message(i, i));
    for (let i = 0; i < 100; i++) sent.splice(i * 5, 0, message(i, i));
    sent.splice(250, 0, { workspaceId: ws, rowId: "bad-1", channel: "fax" });
    sent.splice(260, 0, message(9999, 1, { marker: "internal" }));
    for (let c = 0; c < 7; c++)
      sent.splice(300 + c, 0, {
        workspaceId: ws,
        conversationId: `cv${c}`,
        assigneeUserId: "owner-new",
        at: minute(1000),
      });
    for (let c = 0; c < 7; c++)
      sent.push({ workspaceId: ws, conversationId: `cv${c}`, assigneeUserId: "owner-old", at: minute(500) });
    await Promise.all(
      sent.map((body) =>
        js.publish(
          names.subject(
            "conversationId" in body && !("rowId" in body)
              ? "ingest.inbox.conversation_assigned"
              : "ingest.inbox.message",
          ),
          JSON.stringify(body),
        ),
      ),
    );

    const consumers = await startConsumers({ nc, names, log: pino({ level: "silent" }) }, timelineDeps(sql));
    try {
      await expect.poll(async () => (await consumers[0]!.stats()).pending, { timeout: 20_000 }).toBe(0);
      const [counts] = await sql<{ n: number; distinct: number }[]>`
        select count(*)::int as n, count(distinct id)::int as distinct from interactions where workspace_id = ${ws}`;
      expect(counts).toEqual({ n: 500, distinct: 500 });
      // Human touches (the odd rows) per contact: least and greatest of what arrived, in any order.
      const touches = await sql`
        select contact_id, first_at, last_at from contact_touches where workspace_id = ${ws} order by contact_id`;
      const expected = Array.from({ length: 7 }, (_, c) => {
        const odd = Array.from({ length: 500 }, (_, i) => i).filter((i) => i % 7 === c && i % 2 === 1);
        return {
          contactId: `ct${c}`,
          firstAt: new Date(minute(Math.min(...odd))),
          lastAt: new Date(minute(Math.max(...odd))),
        };
      });
      expect(touches).toEqual(expected);
      const owners = await sql`
        select distinct assignee_user_id from conversations where workspace_id = ${ws}`;
      expect(owners.map((o) => o.assigneeUserId)).toEqual(["owner-new"]);

      const dead = await js.consumers.get(names.stream("INGEST"), {
        filter_subjects: names.subject("ingest.dead.>"),
        deliver_policy: DeliverPolicy.StartTime,
        opt_start_time: since.toISOString(),
      });
      const reasons: string[] = [];
      for (let m = await dead.next({ expires: 1000 }); m; m = await dead.next({ expires: 1000 }))
        reasons.push(m.json<{ payload: string; reason: string }>().payload);
      expect(reasons).toEqual([expect.stringContaining("bad-1")]);
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
    }
  }, 40_000);

  it("a row the database refuses holds back only its own message: the rest of its batch is stored", async () => {
    const ws = "ws_refused";
    const js = jetstream(nc);
    // A database that refuses one row (a trigger of this test), as a constraint might.
    await sql.unsafe(`
      create function refuse_poison() returns trigger language plpgsql as $$
      begin
        if new.id = 'call:poison' then raise exception 'poison row'; end if;
        return new;
      end $$;
      create trigger refuse_poison before insert on interactions for each row execute function refuse_poison();`);
    const call = (rowId: string | number) => ({
      workspaceId: ws,
      rowId,
      contactId: "ct1",
      direction: "outbound",
      userId: "u1",
      startedAt: new Date(Date.UTC(2026, 0, 2)).toISOString(),
      durationSec: 1,
      status: "answered",
    });
    for (let i = 0; i < 50; i++) {
      await js.publish(names.subject("ingest.call"), JSON.stringify(call(i)));
      if (i === 25) await js.publish(names.subject("ingest.call"), JSON.stringify(call("poison")));
    }
    const consumers = await startConsumers({ nc, names, log: pino({ level: "silent" }) }, timelineDeps(sql));
    try {
      const stored = async () =>
        (await sql`select count(*)::int as n from interactions where workspace_id = ${ws}`)[0]!.n;
      await expect.poll(stored, { timeout: 15_000 }).toBe(50);
      await expect
        .poll(async () => (await consumers[1]!.stats()).redeliveries, { timeout: 10_000 })
        .toBeGreaterThan(0);
      expect((await consumers[1]!.stats()).pending).toBe(1);
      // Nothing lost: once the database takes it, the refused message is stored too.
      await sql.unsafe("drop trigger refuse_poison on interactions; drop function refuse_poison()");
      await expect.poll(stored, { timeout: 15_000 }).toBe(51);
      await expect.poll(async () => (await consumers[1]!.stats()).pending, { timeout: 5000 }).toBe(0);
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
    }
  }, 40_000);
});

describe("contact.erased (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: the contact's previews, sender phones and summary go, once; what is ingested after is stored without them", async () => {
    const ws = `ws_erase_${Date.now()}`;
    const js = jetstream(nc);
    const message = (rowId: number, contactId: string) => ({
      workspaceId: ws,
      rowId,
      channel: "whatsapp",
      direction: "inbound",
      contactId,
      conversationId: `cv_${contactId}`,
      channelInstanceId: "inst1",
      senderPhone: "+55 11 97777-1234",
      sentAt: new Date(Date.UTC(2026, 0, 1, 0, rowId)).toISOString(),
      preview: "Oi, aqui é a Maria",
    });
    const reply = { ...message(3, "ct_gone"), direction: "outbound", senderUserId: "u1", senderKind: "user" };
    const erased = {
      id: `evt_erase_${ws}`,
      type: "contact.erased",
      workspaceId: ws,
      occurredAt: "2026-01-02T00:00:00.000Z",
      data: { id: "ct_gone", erasedAt: "2026-01-02T00:00:00.000Z" },
    };
    const consumers = await startConsumers({ nc, names, log: pino({ level: "silent" }) }, timelineDeps(sql));
    try {
      for (const m of [message(1, "ct_gone"), message(2, "ct_kept"), reply])
        await js.publish(names.subject("ingest.inbox.message"), JSON.stringify(m));
      await expect
        .poll(async () => (await sql`select 1 from interactions where workspace_id = ${ws}`).length, {
          timeout: 10_000,
        })
        .toBe(3);
      // The same event twice (a redelivery): applied once.
      for (let i = 0; i < 2; i++)
        await js.publish(names.subject("events.contact.erased"), JSON.stringify(erased));
      await expect
        .poll(async () => (await sql`select 1 from erased_contacts where workspace_id = ${ws}`).length, {
          timeout: 10_000,
        })
        .toBe(1);
      // Ingested after the erasure, whatever the order the streams deliver in.
      await js.publish(
        names.subject("ingest.inbox.message"),
        JSON.stringify({
          ...message(4, "ct_gone"),
          senderUserId: "u1",
          senderKind: "user",
          direction: "outbound",
        }),
      );
      await expect
        .poll(async () => (await sql`select 1 from interactions where workspace_id = ${ws}`).length, {
          timeout: 10_000,
        })
        .toBe(4);
      const rows = await sql`
        select id, contact_id, preview, sender_phone from interactions where workspace_id = ${ws} order by id`;
      expect(rows).toEqual([
        { id: "msg:1", contactId: "ct_gone", preview: null, senderPhone: null },
        {
          id: "msg:2",
          contactId: "ct_kept",
          preview: "Oi, aqui é a Maria",
          senderPhone: "+55 11 97777-1234",
        },
        { id: "msg:3", contactId: "ct_gone", preview: null, senderPhone: null },
        { id: "msg:4", contactId: "ct_gone", preview: null, senderPhone: null },
      ]);
      expect(
        await sql`select 1 from contact_touches where workspace_id = ${ws} and contact_id = 'ct_gone'`,
      ).toEqual([]);
      expect(
        await sql`select 1 from inbox where consumer = 'timeline-erasures' and message_id = ${erased.id}`,
      ).toHaveLength(1);
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
    }
  }, 40_000);
});
