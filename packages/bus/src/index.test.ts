import { naming } from "@funil/config";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectBus, consume, consumeBatches, ensureStreams, publisher } from "./index.js";

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

describe("JetStream helpers (docs/architecture.md §The shape: one place for streams and consumers)", () => {
  it("streams follow the FUNIL_ENV naming, with file storage; ensureStreams is idempotent", async () => {
    await ensureStreams(nc, names, ["EVENTS"]);
    const info = await (await jetstreamManager(nc)).streams.info(names.stream("EVENTS"));
    expect(info.config.subjects).toEqual([`${process.env.FUNIL_TEST_ENV}_unit_bus.events.>`]);
    expect(info.config.storage).toBe("file");
  });

  it("NATS_STREAM_REPLICAS: the number of replicas reaches every stream's config (1 on a lone server)", async () => {
    await ensureStreams(nc, names, ["EVENTS"], { replicas: 1 });
    const info = await (await jetstreamManager(nc)).streams.info(names.stream("EVENTS"));
    expect(info.config.num_replicas).toBe(1);
  });

  it("NATS_STREAM_REPLICAS above 1 on a server that is not clustered fails at once, naming the setting, and leaves an existing stream as it was", async () => {
    const jsm = await jetstreamManager(nc);
    // A stream that exists (the server would store the new count without keeping it) and one to create.
    const fresh = naming(`${process.env.FUNIL_TEST_ENV}_unit_bus_r3`);
    for (const [n, stream] of [
      [names, "EVENTS"],
      [fresh, "INGEST"],
    ] as const) {
      const started = Date.now();
      await expect(ensureStreams(nc, n, [stream], { replicas: 3 })).rejects.toThrow(
        /^NATS_STREAM_REPLICAS=3: NATS cannot keep stream \S+ on 3 servers .*a lone server keeps 1/,
      );
      expect(Date.now() - started).toBeLessThan(2000);
    }
    expect((await jsm.streams.info(names.stream("EVENTS"))).config.num_replicas).toBe(1);
    await expect(jsm.streams.info(fresh.stream("INGEST"))).rejects.toThrow(/not found/);
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
    // What /metrics shows of the consumer (docs/operations.md §Metrics): the redelivery, the lag, nothing left pending.
    // JetStream applies the last ack a moment after the handler sent it: asked at once, its counter can
    // still hold that message (seen once in a full run), so the stats are read until it has caught up.
    let stats = await worker.stats();
    for (
      const until = Date.now() + 2_000;
      stats.pending !== 0 && Date.now() < until;
      stats = await worker.stats()
    )
      await new Promise((r) => setTimeout(r, 50));
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

  it("batches: a backlog comes in batches of at most `batch`, a lone message at once; a failed batch comes back, its acked messages do not", async () => {
    const publish = publisher(nc);
    const run = Date.now();
    const send = (i: number) =>
      publish(names.subject("events.batch.item"), new TextEncoder().encode(String(i)), `b-${i}-${run}`);
    // A backlog waiting before the consumer starts.
    for (let i = 0; i < 50; i++) await send(i);
    const sizes: number[] = [];
    const seen: string[] = [];
    let failOnce = true;
    const worker = await consumeBatches(
      nc,
      {
        stream: names.stream("EVENTS"),
        durable: "unit-batches",
        filterSubject: names.subject("events.batch.>"),
        batch: 8,
        concurrency: 2,
      },
      async (msgs) => {
        sizes.push(msgs.length);
        for (const m of msgs) {
          // The first batch fails after acking its first message: only the rest come back.
          if (failOnce && m !== msgs[0]) {
            failOnce = false;
            throw new Error("transient");
          }
          seen.push(m.string());
          m.ack();
        }
      },
      () => {},
    );
    try {
      const deadline = Date.now() + 10_000;
      while (new Set(seen).size < 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(new Set(seen).size).toBe(50);
      expect(seen.length).toBe(50); // nothing handled twice: the acked message was not redelivered
      expect(Math.max(...sizes)).toBe(8);
      // One more message, alone: handled without waiting for a batch to fill.
      const before = sizes.length;
      await send(50);
      while (!seen.includes("50") && Date.now() < deadline + 5000)
        await new Promise((r) => setTimeout(r, 20));
      expect(seen).toContain("50");
      expect(sizes.slice(before)).toEqual([1]);
      await expect.poll(async () => (await worker.stats()).pending, { timeout: 5000 }).toBe(0);
    } finally {
      await worker.stop();
      await (await jetstreamManager(nc)).consumers.delete(names.stream("EVENTS"), "unit-batches");
    }
  });

  it("stop(): the message being handled finishes, those pulled and not started are not handled here but go back, to another copy", async () => {
    const publish = publisher(nc);
    const spec = {
      stream: names.stream("EVENTS"),
      durable: `unit-stop-${Date.now()}`,
      filterSubject: names.subject("events.stop.>"),
      ackWaitMs: 2_000,
    };
    const first: string[] = [];
    let started!: () => void;
    const handling = new Promise<void>((r) => {
      started = r;
    });
    const a = await consume(
      nc,
      spec,
      async (m) => {
        started();
        await new Promise((r) => setTimeout(r, 1000));
        first.push(m.string());
        m.ack();
      },
      () => {},
    );
    for (let i = 0; i < 10; i++)
      await publish(
        names.subject("events.stop.item"),
        new TextEncoder().encode(String(i)),
        `s-${i}-${Date.now()}`,
      );
    await handling;
    // Every message has reached this process (a message still on its way when the pull ends comes back
    // only after the ack wait: nothing can hand back what it never got).
    await new Promise((r) => setTimeout(r, 200));
    await a.stop();
    expect(first).toHaveLength(1);
    // Naked, they go to the next pull request waiting; one that lands on the stopped copy's last pull
    // (the server keeps it until it expires) comes back after the ack wait.
    const second: string[] = [];
    const b = await consume(
      nc,
      spec,
      async (m) => {
        second.push(m.string());
        m.ack();
      },
      () => {},
    );
    const deadline = Date.now() + 10_000;
    while (new Set(second).size < 9 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await b.stop();
    expect(new Set([...first, ...second]).size).toBe(10);
  });
});
