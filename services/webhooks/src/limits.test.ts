import { describe, expect, it } from "vitest";
import { InFlight, JobQueues } from "./limits.js";

describe("docs/api/webhooks.md §Retries: bounded attempts in flight, overall and per subscription", () => {
  it("a subscription at its bound makes its next attempt wait for its own slot; the others go on", async () => {
    const limits = new InFlight(10, 2, 10_000);
    const a1 = await limits.acquire("a");
    await limits.acquire("a");
    let third = false;
    const a3 = limits.acquire("a").then((release) => {
      third = true;
      return release;
    });
    (await limits.acquire("b"))();
    await new Promise((r) => setTimeout(r, 10));
    expect(third).toBe(false);
    a1();
    a1(); // a second release of the same slot changes nothing
    await a3;
    expect(third).toBe(true);
    expect(limits.size()).toBe(2);
  });

  it("the overall bound makes the next attempt wait for a free slot, in order", async () => {
    const limits = new InFlight(2, 5, 10_000);
    const first = await limits.acquire("a");
    await limits.acquire("b");
    const order: string[] = [];
    const third = limits.acquire("c").then((release) => {
      order.push("c");
      return release;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual([]);
    first();
    await third;
    expect(order).toEqual(["c"]);
    expect(limits.size()).toBe(2);
  });

  it("a slow subscription's jobs wait about as long as its attempts take; a fast one's briefly", async () => {
    const limits = new InFlight(10, 1, 5_000);
    const slow = await limits.acquire("slow");
    await new Promise((r) => setTimeout(r, 300));
    slow();
    (await limits.acquire("fast"))();
    expect(limits.backoffMs("slow")).toBeGreaterThanOrEqual(290);
    expect(limits.backoffMs("slow")).toBeLessThanOrEqual(5_000 * 1.5);
    expect(limits.backoffMs("fast")).toBeLessThan(200);
  });

  it("a subscription whose first attempts still hang waits as long as they have been running", async () => {
    const limits = new InFlight(10, 1, 5_000);
    const hanging = await limits.acquire("hang");
    await new Promise((r) => setTimeout(r, 300));
    // No attempt of it has finished yet, so no duration is known: the running one's age counts.
    expect(limits.backoffMs("hang")).toBeGreaterThanOrEqual(290);
    hanging();
    const again = await limits.acquire("hang");
    again();
    expect(limits.backoffMs("other")).toBeLessThan(200);
  });
});

describe("docs/api/webhooks.md §Retries: jobs held per subscription", () => {
  it("a few jobs of a subscription run, some more wait in order, the rest are refused; others are not held up", () => {
    const jobs = new JobQueues<string>(2, 2, 100);
    expect(["a1", "a2", "a3", "a4", "a5"].map((j) => jobs.offer("a", j))).toEqual([
      "run",
      "run",
      "queued",
      "queued",
      "full",
    ]);
    expect(jobs.offer("b", "b1")).toBe("run");
    expect([...jobs.waiting()]).toEqual(["a3", "a4"]);
    expect(jobs.done("a")).toBe("a3");
    expect(jobs.done("a")).toBe("a4");
    expect(jobs.done("a")).toBeUndefined();
    // One of a's jobs still runs (a4): a new one runs beside it.
    expect(jobs.offer("a", "a6")).toBe("run");
    expect(jobs.size()).toBe(3);
  });

  it("room() waits while the process holds its bound of jobs; takeWaiting() empties the queues", async () => {
    const jobs = new JobQueues<string>(1, 5, 2);
    jobs.offer("a", "a1");
    jobs.offer("a", "a2");
    let roomy = false;
    const room = jobs.room().then(() => {
      roomy = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(roomy).toBe(false);
    expect(jobs.takeWaiting()).toEqual(["a2"]);
    expect(jobs.done("a")).toBeUndefined();
    await room;
    expect(jobs.size()).toBe(0);
  });
});
