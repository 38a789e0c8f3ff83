import { connectBus, ensureStreams, publisher } from "@funil/bus";
import { naming } from "@funil/config";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, openPool, type Sql } from "./client.js";
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

describe("transactional outbox (docs/api/events.md §Guarantees)", () => {
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

describe("outbox relays in several copies (one publisher per database)", () => {
  it("with 3 relays on one outbox each entity's events reach the stream in commit order, and killing the publishing relay mid-run loses nothing", async () => {
    await sql`create table if not exists relay_entities (id text primary key, n int not null)`;
    await sql`truncate relay_entities`;
    const type = `x.ordered${Date.now()}`;
    const dbName = names.database("db");
    const killed = new Set<number>();
    const relays = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const own = await openDatabase(server, dbName, { max: 2 });
        const publish = publisher(nc);
        // A killed relay's process is gone: nothing it had not sent yet leaves it.
        const relay = startOutboxRelay({
          sql: own,
          onError: () => {},
          publish: (subject, payload, id) =>
            killed.has(i) ? new Promise<void>(() => {}) : publish(subject, payload, id),
        });
        return { relay, own };
      }),
    );
    const leaders = () => relays.filter((r) => r.relay.stats().leading);
    await expect.poll(() => leaders().length, { timeout: 5000 }).toBe(1);

    const entities = Array.from({ length: 40 }, (_, i) => `e${i}`);
    const perEntity = 8;
    // Each event bumps its entity's counter in the event's own transaction: the row lock serializes the
    // writes of one entity, so n is that entity's commit order.
    const write = (entity: string) =>
      sql.begin(async (tx) => {
        const [row] = await tx<{ n: number }[]>`
          insert into relay_entities (id, n) values (${entity}, 1)
          on conflict (id) do update set n = relay_entities.n + 1 returning n`;
        await writeEvent(tx, subjectOf, {
          type,
          workspaceId: "ws",
          occurredAt: new Date(),
          data: { entity, n: row!.n },
        });
      });
    const round = () => Promise.all(entities.map((e) => write(e)));
    for (let k = 0; k < perEntity / 2; k++) await round();
    // Kill the publishing relay: its session ends as a dead process's would, and one standing by takes over.
    const leader = relays.findIndex((r) => r.relay.stats().leading);
    killed.add(leader);
    // Dead, it never asks for the lock again (its stop() would wait for its hung publish forever).
    void relays[leader]!.relay.stop();
    await sql`
      select pg_terminate_backend(pid) from pg_locks
      where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = ${dbName})`;
    for (let k = perEntity / 2; k < perEntity; k++) await round();

    const published = async () =>
      (await streamMessages()).filter((m) => m.type === type) as unknown as Array<{
        data: { entity: string; n: number };
      }>;
    await expect
      .poll(async () => (await published()).length, { timeout: 15_000 })
      .toBe(entities.length * perEntity);
    const order = new Map<string, number[]>();
    for (const m of await published())
      order.set(m.data.entity, [...(order.get(m.data.entity) ?? []), m.data.n]);
    const expected = Array.from({ length: perEntity }, (_, i) => i + 1);
    for (const e of entities) expect(order.get(e), e).toEqual(expected);
    expect(leaders().map((r) => relays.indexOf(r))).not.toContain(leader);
    expect(await sql`select 1 from outbox`).toHaveLength(0);

    await Promise.all(
      relays.map(async ({ relay, own }, i) => {
        if (i !== leader) await relay.stop();
        await own.end({ timeout: 1 });
      }),
    );
  }, 30_000);
});

describe('the relay\'s connections (README "Connections")', () => {
  it("each relay holds one session: the publishing one LISTENs on the session that holds the lock, the ones standing by do not LISTEN", async () => {
    // Each relay on a pool of its own, as in a process of its own: every connection it opens is counted.
    const applicationName = `${names.database("db")}:relay-count`;
    const pools = [0, 1, 2].map(() => openPool(server, names.database("db"), { max: 2, applicationName }));
    const relays = pools.map((own) =>
      startOutboxRelay({ sql: own, publish: publisher(nc), intervalMs: 100, onError: () => {} }),
    );
    await expect.poll(() => relays.filter((r) => r.stats().leading).length, { timeout: 5000 }).toBe(1);
    // Let the ones standing by poll a few times more: each poll reuses its one session.
    await new Promise((r) => setTimeout(r, 300));
    const held = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where application_name = ${applicationName}`;
    expect(held[0]!.n).toBe(3);
    // Only the holder listens: `ready` resolves once a relay holds the lock and LISTENs.
    await relays.find((r) => r.stats().leading)?.ready;
    await Promise.all(relays.map((r) => r.stop()));
    await Promise.all(pools.map((own) => own.end({ timeout: 1 })));
    const after = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where application_name = ${applicationName}`;
    expect(after[0]!.n).toBe(0);
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
