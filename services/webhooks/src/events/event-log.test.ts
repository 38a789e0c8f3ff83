import { connectBus, ensureStreams, type NatsConnection } from "@funil/bus";
import { naming } from "@funil/config";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { floorOf, loggedUpTo } from "./event-log.js";
import { FANOUT_DURABLE } from "./fanout.js";

/**
 * How far the event log is complete, on a real NATS with an EVENTS stream of its own: the fan-out
 * consumer's ack floor, which an event acknowledged out of order does not move past an earlier one.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_logfloor`);
const url = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connectBus(url, "event-log-test");
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(names.stream("EVENTS")).catch(() => {});
  await ensureStreams(nc, names, ["EVENTS"]);
  await jsm.consumers.add(names.stream("EVENTS"), {
    durable_name: FANOUT_DURABLE,
    ack_policy: AckPolicy.Explicit,
    filter_subject: names.subject("events.>"),
  });
});
afterAll(async () => {
  await nc?.close();
});

describe("the event log's floor (docs/api/events.md §Catch-up: GET /events)", () => {
  it("docs/api/events.md §Catch-up: GET /events: an event is listed only once every earlier one is recorded: the floor stays below an event still on its way", async () => {
    const js = jetstream(nc);
    for (let i = 1; i <= 3; i++) await js.publish(names.subject("events.contact.created"), `{"n":${i}}`);
    const upTo = loggedUpTo(nc, names, 0);
    expect(await upTo()).toBe(0);
    const consumer = await js.consumers.get(names.stream("EVENTS"), FANOUT_DURABLE);
    const batch = await consumer.fetch({ max_messages: 3, expires: 2_000 });
    const msgs = [];
    for await (const m of batch) msgs.push(m);
    expect(msgs.map((m) => m.seq)).toEqual([1, 2, 3]);
    // The second and third are recorded first: nothing is listed while the first is on its way.
    await msgs[1]!.ackAck();
    await msgs[2]!.ackAck();
    expect(await upTo()).toBe(0);
    await msgs[0]!.ackAck();
    expect(await upTo()).toBe(3);
  });

  it("docs/api/events.md §Catch-up: GET /events: while NATS does not answer, the last floor stands; with none yet, 503 unavailable", async () => {
    const own = await connectBus(url, "event-log-test-2");
    const upTo = loggedUpTo(own, names, 0);
    const before = await upTo();
    await own.close();
    expect(await upTo()).toBe(before);
    const never = loggedUpTo(own, names, 0);
    await expect(never()).rejects.toMatchObject({ code: "unavailable" });
  });

  it("docs/api/events.md §Catch-up: GET /events: the catch-ups of one turn share one question to NATS; a catch-up after it went out gets an answer asked after it began; a floor is used again for FLOOR_MAX_AGE_MS", async () => {
    let asked = 0;
    let floor = 5;
    const ask = async () => {
      asked++;
      const answer = floor;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return answer;
    };
    const upTo = floorOf(ask, 0);
    // Three calls of one RPC batch: one question.
    expect(await Promise.all([upTo(), upTo(), upTo()])).toEqual([5, 5, 5]);
    expect(asked).toBe(1);
    // A call that starts while a question is out does not take that question's older answer.
    const first = upTo();
    await new Promise((resolve) => setTimeout(resolve, 5));
    floor = 9;
    const second = upTo();
    expect([await first, await second]).toEqual([5, 9]);
    expect(asked).toBe(3);
    // A floor asked less than maxAgeMs ago is used again; after that, a new question.
    const aged = floorOf(ask, 200);
    asked = 0;
    expect(await aged()).toBe(9);
    floor = 12;
    expect(await aged()).toBe(9);
    expect(asked).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await aged()).toBe(12);
    expect(asked).toBe(2);
    // Shared on the real stream too: every call of the turn gets the same floor.
    const real = loggedUpTo(nc, names);
    const floors = await Promise.all([real(), real(), real()]);
    expect(new Set(floors).size).toBe(1);
  });
});
