import { describe, expect, it } from "vitest";
import { InFlight } from "./limits.js";

describe("issue 11: bounded attempts in flight, overall and per subscription", () => {
  it("a subscription at its bound has no room; the others still have", async () => {
    const limits = new InFlight(10, 2, 10_000);
    const a1 = await limits.acquire("a");
    await limits.acquire("a");
    expect(limits.hasRoom("a")).toBe(false);
    expect(limits.hasRoom("b")).toBe(true);
    a1();
    a1(); // a second release of the same slot changes nothing
    expect(limits.hasRoom("a")).toBe(true);
    expect(limits.size()).toBe(1);
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
