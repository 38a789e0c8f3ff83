import { naming } from "@funil/config";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectBus, consume, ensureStreams, publisher } from "./index.js";

const names = naming(`${process.env.FUNIL_TEST_ENV}_unit_bus`);
let nc: Awaited<ReturnType<typeof connectBus>>;

beforeAll(async () => {
  nc = await connectBus(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "bus-test");
  await ensureStreams(nc, names, ["EVENTS"]);
  await (await jetstreamManager(nc)).streams.purge(names.stream("EVENTS"));
});
afterAll(async () => {
  await nc?.close();
});

describe("JetStream helpers (DESIGN: one place for streams and consumers)", () => {
  it("streams follow the FUNIL_ENV naming, with file storage; ensureStreams is idempotent", async () => {
    await ensureStreams(nc, names, ["EVENTS"]);
    const info = await (await jetstreamManager(nc)).streams.info(names.stream("EVENTS"));
    expect(info.config.subjects).toEqual([`${process.env.FUNIL_TEST_ENV}_unit_bus.events.>`]);
    expect(info.config.storage).toBe("file");
  });

  it("a publish with the same message id inside the duplicate window is stored once", async () => {
    const publish = publisher(nc);
    const subject = names.subject("events.dedup.test");
    const body = new TextEncoder().encode("{}");
    // Unique per run: the duplicate window outlives a purge, so a fixed id would collide with the last run.
    const id = `evt_${Date.now()}_${Math.random().toString(36).slice(2)}`;
    await publish(subject, body, id);
    await publish(subject, body, id);
    const info = await (await jetstreamManager(nc)).streams.info(names.stream("EVENTS"), {
      subjects_filter: subject,
    });
    expect(info.state.subjects?.[subject]).toBe(1);
  });

  it("a durable consumer gets every message; a failed handler means a redelivery, not a loss", async () => {
    const publish = publisher(nc);
    const seen: string[] = [];
    let failOnce = true;
    const worker = await consume(
      nc,
      {
        stream: names.stream("EVENTS"),
        durable: "unit-worker",
        filterSubject: names.subject("events.work.>"),
      },
      async (m) => {
        const id = m.string();
        if (id === "b" && failOnce) {
          failOnce = false;
          throw new Error("transient");
        }
        seen.push(id);
        m.ack();
      },
      () => {},
    );
    for (const id of ["a", "b", "c"])
      await publish(names.subject("events.work.item"), new TextEncoder().encode(id), `w-${id}-${Date.now()}`);
    const deadline = Date.now() + 10_000;
    while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    // What /metrics shows of the consumer (issue 13 §4): the redelivery, the lag, nothing left pending.
    const stats = await worker.stats();
    await worker.stop();
    expect(seen.sort()).toEqual(["a", "b", "c"]);
    expect(stats).toMatchObject({ name: "unit-worker", redeliveries: 1, pending: 0 });
    expect(stats.lagMs).toBeGreaterThanOrEqual(0);
    await (await jetstreamManager(nc)).consumers.delete(names.stream("EVENTS"), "unit-worker");
  });

  it("concurrency: several messages are handled at once, up to the limit, and a failure is still redelivered", async () => {
    const publish = publisher(nc);
    let running = 0;
    let most = 0;
    let failOnce = true;
    const seen = new Set<string>();
    const worker = await consume(
      nc,
      {
        stream: names.stream("EVENTS"),
        durable: "unit-parallel",
        filterSubject: names.subject("events.parallel.>"),
        concurrency: 4,
      },
      async (m) => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 30));
        running--;
        if (m.string() === "3" && failOnce) {
          failOnce = false;
          throw new Error("transient");
        }
        seen.add(m.string());
        m.ack();
      },
      () => {},
    );
    const run = Date.now();
    for (let i = 0; i < 20; i++)
      await publish(
        names.subject("events.parallel.item"),
        new TextEncoder().encode(String(i)),
        `p-${i}-${run}`,
      );
    const deadline = Date.now() + 10_000;
    while (seen.size < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await worker.stop();
    expect(seen.size).toBe(20);
    expect(most).toBe(4);
    await (await jetstreamManager(nc)).consumers.delete(names.stream("EVENTS"), "unit-parallel");
  });
});
