import { connectBus, ensureStreams, publisher } from "@funil/bus";
import { naming } from "@funil/config";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";
import { migrate } from "./migrate.js";
import { firstDelivery, startOutboxRelay, writeEvent } from "./outbox.js";

const names = naming(`${process.env.FUNIL_TEST_ENV}_unit_outbox`);
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let sql: Sql;
let nc: Awaited<ReturnType<typeof connectBus>>;

beforeAll(async () => {
  sql = await openDatabase(server, names.database("db"));
  await migrate(sql);
  await sql`delete from outbox`;
  nc = await connectBus(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "outbox-test");
  await ensureStreams(nc, names, ["EVENTS"]);
  await (await jetstreamManager(nc)).streams.purge(names.stream("EVENTS"));
});
afterAll(async () => {
  await nc?.close();
  await sql?.end();
});

async function streamMessages() {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(names.stream("EVENTS"));
  const out = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(names.stream("EVENTS"), { seq });
    if (m) out.push(m.json<{ id: string; type: string }>());
  }
  return out;
}
const subjectOf = (type: string) => names.subject(`events.${type}`);

describe("transactional outbox (API §12)", () => {
  it("an event leaves the service if and only if its transaction commits", async () => {
    const committed = await sql.begin((tx) =>
      writeEvent(tx, subjectOf, {
        type: "x.committed",
        workspaceId: "ws",
        occurredAt: new Date(),
        data: { n: 1 },
      }),
    );
    await sql
      .begin(async (tx) => {
        await writeEvent(tx, subjectOf, {
          type: "x.rolled_back",
          workspaceId: "ws",
          occurredAt: new Date(),
          data: {},
        });
        throw new Error("abort");
      })
      .catch(() => {});
    const relay = startOutboxRelay({ sql, publish: publisher(nc) });
    await relay.flush();
    await relay.stop();
    const types = (await streamMessages()).map((m) => m.type);
    expect(types).toContain("x.committed");
    expect(types).not.toContain("x.rolled_back");
    expect((await streamMessages()).find((m) => m.type === "x.committed")?.id).toBe(committed.id);
    expect(await sql`select * from outbox`).toHaveLength(0);
  });

  it("a failed publish keeps the row; the retry publishes it, and a republished duplicate is dropped by its message id", async () => {
    const evt = await sql.begin((tx) =>
      writeEvent(tx, subjectOf, { type: "x.retry", workspaceId: "ws", occurredAt: new Date(), data: {} }),
    );
    const failing = startOutboxRelay({
      sql,
      publish: async () => {
        throw new Error("bus down");
      },
      onError: () => {},
    });
    try {
      await expect(failing.flush()).rejects.toThrow("bus down");
    } finally {
      await failing.stop();
    }
    expect(await sql`select id from outbox`).toEqual([{ id: evt.id }]);
    // Simulate a crash after publishing and before deleting: publish once by hand, then let the relay run.
    await publisher(nc)(subjectOf("x.retry"), new TextEncoder().encode(JSON.stringify(evt)), evt.id);
    const relay = startOutboxRelay({ sql, publish: publisher(nc) });
    await relay.flush();
    await relay.stop();
    expect((await streamMessages()).filter((m) => m.id === evt.id)).toHaveLength(1);
  });

  it("consumers record what they processed: the second delivery of a message is skipped", async () => {
    const first = await sql.begin((tx) => firstDelivery(tx, "test-consumer", "evt_same"));
    const second = await sql.begin((tx) => firstDelivery(tx, "test-consumer", "evt_same"));
    expect([first, second]).toEqual([true, false]);
    await sql`delete from inbox where consumer = 'test-consumer'`;
  });

  it("the relay wakes on NOTIFY and publishes without waiting for its polling interval", async () => {
    const relay = startOutboxRelay({ sql, publish: publisher(nc), intervalMs: 60_000 });
    await relay.ready;
    const evt = await sql.begin((tx) =>
      writeEvent(tx, subjectOf, { type: "x.notify", workspaceId: "ws", occurredAt: new Date(), data: {} }),
    );
    const js = jetstream(nc);
    expect(js).toBeDefined();
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && !(await streamMessages()).some((m) => m.id === evt.id))
      await new Promise((r) => setTimeout(r, 50));
    await relay.stop();
    expect((await streamMessages()).some((m) => m.id === evt.id)).toBe(true);
  });
});

describe("migration runner", () => {
  it("applies each migration once, also when several copies start together", async () => {
    const results = await Promise.all([migrate(sql), migrate(sql), migrate(sql)]);
    expect(results.flat()).toEqual([]);
    const applied = await sql`select name from schema_migrations order by name`;
    expect(applied.map((r) => r.name)).toEqual(expect.arrayContaining(["core:00001_outbox_inbox"]));
  });
});
