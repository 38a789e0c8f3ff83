import { connectBus, ensureStreams, type NatsConnection } from "@funil/bus";
import { naming } from "@funil/config";
import { migrate, openDatabase, postgres, type Sql } from "@funil/db";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
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

describe("ingest consumers (issue 10 §1)", () => {
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
});
