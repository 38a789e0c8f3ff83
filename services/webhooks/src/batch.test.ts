import { describe, expect, it } from "vitest";
import { batcher } from "./batch.js";

describe("calls of one turn share one batch", () => {
  it("calls made together run once, each gets its own answer in order", async () => {
    const runs: number[][] = [];
    const double = batcher(async (xs: number[]) => {
      runs.push(xs);
      return xs.map((x) => x * 2);
    });
    const answers = await Promise.all([1, 2, 3].map((x) => double(x)));
    expect(answers).toEqual([2, 4, 6]);
    expect(runs).toEqual([[1, 2, 3]]);
    expect(await double(5)).toBe(10);
    expect(runs).toEqual([[1, 2, 3], [5]]);
  });

  it("a batch is cut at its bound, and a failed batch fails each of its calls", async () => {
    const runs: number[][] = [];
    const check = batcher(async (xs: number[]) => {
      runs.push(xs);
      if (xs.includes(0)) throw new Error("zero");
      return xs;
    }, 2);
    const answers = await Promise.allSettled([1, 2, 0, 3].map((x) => check(x)));
    expect(runs).toEqual([
      [1, 2],
      [0, 3],
    ]);
    expect(answers.map((a) => a.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected"]);
  });
});
