import { executionAsyncId } from "node:async_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { type Context, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { SampledContextManager } from "./sampled-context.js";

let ids = 0;
/** A context holding a span of a trace that is sampled or not. */
function contextOf(isSampled: boolean): Context {
  ids++;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: ids.toString(16).padStart(32, "0"),
    spanId: ids.toString(16).padStart(16, "0"),
    traceFlags: isSampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
  });
}

/** Whether Node's promise hooks are on: with them, the continuation of an await runs under an async id of its own. */
async function hooksOn(): Promise<boolean> {
  const before = executionAsyncId();
  await null;
  return executionAsyncId() !== before;
}

describe("SampledContextManager: sampled work carried across awaits, work not sampled only synchronously", () => {
  it("a sampled context stays active across awaits and timers, each concurrent piece of work its own", async () => {
    const m = new SampledContextManager();
    const a = contextOf(true);
    const b = contextOf(true);
    const seen: Array<[string, Context]> = [];
    const work = (name: string) => async () => {
      await sleep(5);
      seen.push([name, m.active()]);
      await Promise.resolve();
      seen.push([name, m.active()]);
    };
    await Promise.all([m.with(a, work("a")), m.with(b, work("b"))]);
    expect(seen.filter(([n]) => n === "a").map(([, c]) => c)).toEqual([a, a]);
    expect(seen.filter(([n]) => n === "b").map(([, c]) => c)).toEqual([b, b]);
    expect(m.active()).toBe(ROOT_CONTEXT);
  });

  it("a context not sampled is active while its function runs synchronously, and not after an await", async () => {
    const m = new SampledContextManager();
    const u = contextOf(false);
    let during: Context | undefined;
    let after: Context | undefined;
    await m.with(u, async () => {
      during = m.active();
      await Promise.resolve();
      after = m.active();
    });
    expect(during).toBe(u);
    expect(after).toBe(ROOT_CONTEXT);
    expect(m.sampledInFlight).toBe(0);
  });

  it("turns the async hooks on only while sampled work is in flight, off once the last settles (fulfilled or rejected)", async () => {
    const m = new SampledContextManager();
    expect(await hooksOn()).toBe(false);
    await m.with(contextOf(false), async () => {
      expect(await hooksOn()).toBe(false);
    });
    let release = () => {};
    const held = m.with(contextOf(true), () => new Promise<void>((r) => (release = r)));
    const failing = m.with(contextOf(true), async () => {
      await sleep(1);
      throw new Error("boom");
    });
    expect(m.sampledInFlight).toBe(2);
    expect(await hooksOn()).toBe(true);
    await expect(failing).rejects.toThrow("boom");
    expect(m.sampledInFlight).toBe(1);
    release();
    await held;
    expect(m.sampledInFlight).toBe(0);
    // Node turns the promise hooks off in a microtask of its own, after the current one.
    await sleep(1);
    expect(await hooksOn()).toBe(false);
    // A function that throws synchronously, or answers no promise, ends its piece of work at once.
    expect(() =>
      m.with(contextOf(true), () => {
        throw new Error("sync");
      }),
    ).toThrow("sync");
    expect(m.with(contextOf(true), () => 42)).toBe(42);
    expect(m.sampledInFlight).toBe(0);
  });

  it("nests: a context not sampled inside sampled work, and sampled work inside one not sampled, each restored", async () => {
    const m = new SampledContextManager();
    const s = contextOf(true);
    const u = contextOf(false);
    const trail: Context[] = [];
    await m.with(s, async () => {
      m.with(u, () => {
        trail.push(m.active());
        m.with(s, () => trail.push(m.active()));
        trail.push(m.active());
      });
      trail.push(m.active());
      await sleep(1);
      trail.push(m.active());
    });
    expect(trail).toEqual([u, s, u, s, s]);
  });

  it("binds a function to a context, and passes its this and arguments", () => {
    const m = new SampledContextManager();
    const u = contextOf(false);
    const bound = m.bind(u, function (this: { k: number }, x: number) {
      return [m.active(), this.k + x];
    });
    expect(bound.call({ k: 1 }, 2)).toEqual([u, 3]);
  });
});
