import { connectBus, ensureStreams, publisher, watchBus } from "@funil/bus";
import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql, startOutboxRelay, writeEvent } from "@funil/db";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { admin, type GatewayCopy, gatewayCopy, newWorkspace, request } from "../helpers.js";
import { type PrivateServer, privateServer } from "./servers.js";

const names = naming(`${process.env.FUNIL_TEST_ENV ?? "test"}_chaos_relay`);
const silent = { warn() {}, info() {} };

describe("docs/operations.md §Faults: after NATS returns, the outbox relay publishes again within a second", () => {
  let nats: PrivateServer;
  let sql: Sql;
  beforeAll(async () => {
    nats = await privateServer("nats");
    sql = await openDatabase(
      process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
      names.database("relay"),
    );
    await migrate(sql);
    await sql`delete from outbox`;
  });
  afterAll(async () => {
    await sql?.end();
    await nats?.close();
  });

  it("events written while NATS is down are all in the stream, once, within a second of its return", async () => {
    const nc = await connectBus(nats.url, "relay-recovery");
    await ensureStreams(nc, names, ["EVENTS"]);
    let recoveredAt = 0;
    const relay = startOutboxRelay({
      sql,
      publish: publisher(nc),
      onError: () => {},
      onRecover: () => {
        recoveredAt = Date.now();
      },
    });
    watchBus(nc, { log: silent, onReconnect: relay.wake });
    // The test's own reads time out fast, so that they do not hide how fast the relay is.
    const jsm = await jetstreamManager(nc, { timeout: 300 });
    const stored = async () => (await jsm.streams.info(names.stream("EVENTS"))).state.messages;
    const write = (n: number) =>
      sql.begin((tx) =>
        writeEvent(tx, (t) => names.subject(`events.${t}`), {
          type: "x.written",
          workspaceId: "ws",
          occurredAt: new Date(),
          data: { n },
        }),
      );
    try {
      await write(0);
      await expect.poll(stored, { timeout: 5000 }).toBe(1);
      await nats.kill();
      for (let n = 1; n <= 50; n++) await write(n);
      await new Promise((r) => setTimeout(r, 1000));
      await nats.start();
      const back = Date.now();
      await expect.poll(() => recoveredAt, { timeout: 10_000, interval: 10 }).toBeGreaterThan(0);
      const catchUpMs = recoveredAt - back;
      await relay.flush();
      await expect.poll(stored, { timeout: 10_000 }).toBe(51);
      console.log(`relay caught up ${catchUpMs} ms after NATS was back`);
      expect(catchUpMs).toBeLessThan(1000);
      expect(relay.stats().publishFailures).toBeGreaterThan(0);
      expect(await sql`select 1 from outbox`).toHaveLength(0);
    } finally {
      await relay.stop();
      await nc.close();
    }
  }, 30_000);
});

describe("docs/operations.md §Faults: a Redis outage answers within 200 ms and recovers by itself", () => {
  let redis: PrivateServer;
  let gw: GatewayCopy;
  const consoleError = vi.spyOn(console, "error");
  beforeAll(async () => {
    redis = await privateServer("redis");
    gw = await gatewayCopy({
      REDIS_URL: redis.url,
      RATE_LIMIT_MAX: "5",
      KEY_CACHE_TTL_MS: "3600000",
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await redis?.close();
  });

  const get = async (key: string) => {
    const started = Date.now();
    const res = await request("GET", `${gw.url}/api/v1/members`, undefined, {
      authorization: `Bearer ${key}`,
    });
    return { ...res, ms: Date.now() - started };
  };

  it("requests answer at once, the rate limit runs per copy, /readyz says degraded, a revoked key goes within 1 s", async () => {
    const limited = await newWorkspace({ scopes: ["members.read"] });
    const revoked = await newWorkspace({ scopes: ["members.read"] });
    expect((await get(revoked.key)).status).toBe(200); // cached for an hour from here
    await redis.kill();
    await new Promise((r) => setTimeout(r, 300));

    const answers = [];
    for (let i = 0; i < 7; i++) answers.push(await get(limited.key));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(200);
    expect(answers[5]!.headers.get("retry-after")).toBeTruthy();

    const ready = await request("GET", `${gw.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe("degraded");
    expect(ready.body.checks.redis).toMatchObject({ ok: false, required: false });

    // The revocation cannot be announced (no Redis): the cached key still goes within OFFLINE_KEY_TTL_MS.
    expect((await admin("DELETE", `/keys/${revoked.keyId}`)).status).toBe(204);
    await expect.poll(async () => (await get(revoked.key)).status, { timeout: 1500 }).toBe(401);

    await redis.start();
    await expect
      .poll(async () => (await request("GET", `${gw.url}/readyz`)).body.status, { timeout: 5000 })
      .toBe("ready");
    const unhandled = consoleError.mock.calls.filter((c) => String(c[0]).includes("Unhandled error event"));
    expect(unhandled).toEqual([]);
  }, 30_000);
});
