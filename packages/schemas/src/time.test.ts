import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isoString, parseTimestamp, parseTimestamptz } from "./time.js";

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

describe("parseTimestamptz (PostgreSQL's text of a timestamptz, read by every pool)", () => {
  it("docs/api/conventions.md §Timestamps: years 0001-9999, any offset, to the millisecond", () => {
    const cases: Array<[string, string]> = [
      ["2026-11-25 10:00:00+00", "2026-11-25T10:00:00.000Z"],
      ["2026-11-25 10:00:00.12+00", "2026-11-25T10:00:00.120Z"],
      ["2026-11-25 10:00:00.123456+00", "2026-11-25T10:00:00.123Z"],
      ["0099-12-31 23:59:59.999+00", "0099-12-31T23:59:59.999Z"],
      ["0001-01-01 00:00:00+00", "0001-01-01T00:00:00.000Z"],
      ["2026-11-25 07:00:00-03", "2026-11-25T10:00:00.000Z"],
      ["2026-11-25 15:30:00+05:30", "2026-11-25T10:00:00.000Z"],
      ["1890-01-01 00:00:00-03:06:28", "1890-01-01T03:06:28.000Z"],
      ["0001-12-31 23:59:59+00 BC", "0000-12-31T23:59:59.000Z"],
    ];
    for (const [text, iso] of cases) expect(parseTimestamptz(text).toISOString()).toBe(iso);
  });

  it("any instant of years 1-9999 written as PostgreSQL writes it in UTC reads back the same", () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date("0001-01-01T00:00:00Z"),
          max: new Date("9999-12-31T23:59:59.999Z"),
          noInvalidDate: true,
        }),
        (d) => {
          const iso = d.toISOString();
          const ms = iso.slice(20, 23).replace(/0+$/, "");
          const text = `${iso.slice(0, 10)} ${iso.slice(11, 19)}${ms ? `.${ms}` : ""}+00`;
          expect(parseTimestamptz(text).toISOString()).toBe(iso);
        },
      ),
    );
  });

  it("infinity and other forms are new Date's (an invalid date, as before)", () => {
    expect(Number.isNaN(parseTimestamptz("infinity").getTime())).toBe(true);
  });
});
