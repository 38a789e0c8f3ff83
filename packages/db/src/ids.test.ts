import { describe, expect, it } from "vitest";
import { newId } from "./ids.js";

describe("newId", () => {
  it("is the prefix, 10 characters of time and 16 random ones, in Crockford base32", () => {
    expect(newId("ct", 0)).toMatch(/^ct_0000000000[0-9a-hjkmnp-tv-z]{16}$/);
    expect(newId("dlv")).toMatch(/^dlv_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(() => newId("x".repeat(33))).toThrow(/prefix/);
  });

  it("orders by creation time, and never repeats across refills of its random pool", () => {
    expect(newId("x", 1_000) < newId("x", 2_000)).toBe(true);
    const ids = Array.from({ length: 5_000 }, () => newId("x", 42));
    expect(new Set(ids).size).toBe(ids.length);
    const randomParts = new Set(ids.map((id) => id.slice(-16)));
    expect(randomParts.size).toBe(ids.length);
  });
});
