import { naming } from "@funil/config";
import { jetstreamManager } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectBus, ensureStreams, publisher } from "./index.js";

const names = naming(`${process.env.FUNIL_TEST_ENV}_unit_bus_age`);
let nc: Awaited<ReturnType<typeof connectBus>>;

beforeAll(async () => {
  nc = await connectBus(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "bus-retention-test");
});
afterAll(async () => {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(names.stream("EVENTS")).catch(() => {});
  await nc?.close();
});

describe("stream retention (docs/operations.md §Retention: EVENTS_MAX_AGE_MS and the other streams' max age)", () => {
  it("a stream keeps a message for its max age and then lets it go; the duplicate window stays within it", async () => {
    await ensureStreams(nc, names, ["EVENTS"], { maxAgeMs: { EVENTS: 1500 } });
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(names.stream("EVENTS"));
    expect(info.config.max_age).toBe(nanos(1500));
    expect(info.config.duplicate_window).toBe(nanos(1500));
    await publisher(nc)(names.subject("events.x.aged"), new TextEncoder().encode("{}"), `aged-${Date.now()}`);
    expect((await jsm.streams.info(names.stream("EVENTS"))).state.messages).toBe(1);
    await expect
      .poll(async () => (await jsm.streams.info(names.stream("EVENTS"))).state.messages, { timeout: 10_000 })
      .toBe(0);
  });

  it("a longer max age updates the stream in place, and the duplicate window goes back to two minutes", async () => {
    await ensureStreams(nc, names, ["EVENTS"], { maxAgeMs: { EVENTS: 7 * 86_400_000 } });
    const info = await (await jetstreamManager(nc)).streams.info(names.stream("EVENTS"));
    expect(info.config.max_age).toBe(nanos(7 * 86_400_000));
    expect(info.config.duplicate_window).toBe(nanos(120_000));
  });
});
