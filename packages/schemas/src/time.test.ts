import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isoString, parseTimestamp } from "./time.js";

describe("timestamp arguments (docs/api/conventions.md §Timestamps: an unparsable timestamp is a 400, never a 500)", () => {
  it("accepts ISO-8601 with an offset, from year 1 to 9999", () => {
    expect(parseTimestamp("2026-11-22T10:00:00.000Z")?.toISOString()).toBe("2026-11-22T10:00:00.000Z");
    expect(parseTimestamp("2026-11-22T07:00:00-03:00")?.toISOString()).toBe("2026-11-22T10:00:00.000Z");
    expect(parseTimestamp("0001-01-01T00:00:00Z")?.toISOString()).toBe("0001-01-01T00:00:00.000Z");
    expect(parseTimestamp("9999-12-31T23:59:59.999Z")).toBeDefined();
  });
  it("refuses what PostgreSQL cannot store or JavaScript cannot read", () => {
    for (const v of [
      "0000-01-01T00:00:00Z",
      "+010000-01-01T00:00:00Z",
      "-000001-01-01T00:00:00Z",
      "yesterday",
      "",
      "9".repeat(65),
    ])
      expect(parseTimestamp(v), v).toBeUndefined();
  });
});

describe("isoString (the API's timestamps: ISO-8601 in UTC with milliseconds)", () => {
  it("is toISOString, for any date, valid or not", () => {
    fc.assert(
      fc.property(fc.date({ noInvalidDate: false }), (d) => {
        if (Number.isNaN(d.getTime())) expect(() => isoString(d)).toThrow(RangeError);
        else expect(isoString(d)).toBe(d.toISOString());
      }),
      { numRuns: 5000 },
    );
    for (const d of ["0001-01-01T00:00:00.000Z", "0999-12-31T23:59:59.999Z", "1000-01-01T00:00:00.000Z"])
      expect(isoString(new Date(d))).toBe(d);
    // An absent date is an unset field.
    expect(isoString(null)).toBeUndefined();
    expect(isoString(undefined)).toBeUndefined();
  });
});
