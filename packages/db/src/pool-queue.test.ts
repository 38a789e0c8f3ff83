import { createRequire } from "node:module";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import { describe, expect, it } from "vitest";

/**
 * postgres.js keeps its pool's connections in queues (open, busy, full…). Its Queue as published (3.4.9)
 * leaves a slot behind at every shift that does not empty it, and `remove` scanned those slots from the
 * start: under a load that keeps every connection busy (each query then pipelined on the busy connection
 * taken by shift, and put back by push) the busy queue grew by one slot per query and every query paid a
 * scan of them all, the pool's throughput falling from 55 000 to 13 000 statements a second in 12 s
 * (bench/pg-pool.mjs; upstream: porsager/postgres#747). patches/postgres+3.4.9.patch, applied by npm ci
 * (patch-package), makes `remove` start where the queue starts and lets go of the spent slots.
 */
interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}
const require = createRequire(import.meta.url);
const installed = path.join(path.dirname(require.resolve("postgres")), "../../src/queue.js");
const { default: Queue } = (await import(pathToFileURL(installed).href)) as {
  default: <T>(initial?: T[]) => Queue<T>;
};

const gc = (() => {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
})();

describe("postgres.js's pool queues (patched: patches/postgres+3.4.9.patch)", () => {
  it("keep their order: first in, first out, and remove takes out exactly what it names", () => {
    const q = Queue<string>();
    for (const c of ["a", "b", "c", "d"]) q.push(c);
    expect(q.shift()).toBe("a");
    expect(q.remove("a")).toBeNull();
    expect(q.remove("c")).toBe("c");
    q.push("a");
    expect(q.length).toBe(3);
    expect([q.shift(), q.shift(), q.shift(), q.shift()]).toEqual(["b", "d", "a", undefined]);
    expect(q.length).toBe(0);
  });

  it("hold no slot for what they gave out: 300 000 queries pipelined on four busy connections leave the heap as it was", () => {
    const busy = Queue<object>();
    const connections = [{}, {}, {}, {}];
    for (const c of connections) busy.push(c);
    const cycle = (n: number) => {
      for (let i = 0; i < n; i++) {
        // What the pool does to pipeline a query on a busy connection: go(busy.shift(), query), then
        // move(c, busy), which removes c (no longer there) and pushes it back.
        const c = busy.shift()!;
        busy.remove(c);
        busy.push(c);
      }
    };
    cycle(1000);
    gc();
    const before = v8.getHeapStatistics().used_heap_size;
    cycle(300_000);
    gc();
    const grown = v8.getHeapStatistics().used_heap_size - before;
    // Unpatched, the queue holds 300 000 spent slots: 2.4 MB or more.
    expect(grown).toBeLessThan(1024 * 1024);
    expect(busy.length).toBe(4);
    expect(new Set([busy.shift(), busy.shift(), busy.shift(), busy.shift()])).toEqual(new Set(connections));
  });
});
