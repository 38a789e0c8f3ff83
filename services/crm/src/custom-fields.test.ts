import { describe, expect, it } from "vitest";
import {
  checkCustomFields,
  type FieldDefinition,
  isCalendarDate,
  mergeCustomFields,
} from "./custom-fields.js";

const defs: FieldDefinition[] = [
  { fieldKey: "t", type: "text", options: [] },
  { fieldKey: "n", type: "number", options: [] },
  { fieldKey: "b", type: "boolean", options: [] },
  { fieldKey: "d", type: "date", options: [] },
  { fieldKey: "s", type: "select", options: ["x", "y"] },
];

describe("customFields validation (docs/api/contacts.md §Contact)", () => {
  it("accepts values of each definition's type, and null (remove)", () => {
    expect(checkCustomFields({ t: "hi", n: 1.5, b: false, d: "2026-01-31", s: "y" }, defs)).toEqual([]);
    expect(checkCustomFields({ d: "2024-02-29", t: null }, defs)).toEqual([]);
  });
  it("docs/api/contacts.md §GET /custom-fields: a date field takes only a day that exists, as YYYY-MM-DD", () => {
    for (const d of ["2000-02-29", "2024-02-29", "0001-01-01", "9999-12-31", "2024-04-30", "2024-12-31"])
      expect(isCalendarDate(d), d).toBe(true);
    for (const d of [
      "2023-02-29",
      "2100-02-29",
      "2024-02-30",
      "2024-04-31",
      "2024-06-31",
      "2024-13-01",
      "2024-00-10",
      "2024-01-00",
      "0000-01-01",
      "2024-02-30T00:00:00Z",
      "2026-01-31T10:00:00Z",
      "2024-1-01",
      "+02024-01-01",
      "2024-01-01 ",
    ])
      expect(isCalendarDate(d), d).toBe(false);
    expect(checkCustomFields({ d: "2023-02-29" }, defs).map((p) => p.path)).toEqual(["customFields.d"]);
  });
  it("docs/api/contacts.md §GET /custom-fields: every day of the proleptic Gregorian calendar is one, and no other (against Date)", () => {
    for (let year = 1896; year <= 2104; year++)
      for (let month = 1; month <= 12; month++)
        for (let day = 1; day <= 31; day++) {
          const text = `${year}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
          expect(isCalendarDate(text), text).toBe(new Date(`${text}T00:00:00Z`).getUTCDate() === day);
        }
  });
  it("names an unknown key and each wrong type", () => {
    const problems = checkCustomFields({ zz: 1, t: 1, n: "1", b: "true", d: "31/01/2026", s: "z" }, defs);
    expect(problems.map((p) => p.path)).toEqual([
      "customFields.zz",
      "customFields.t",
      "customFields.n",
      "customFields.b",
      "customFields.d",
      "customFields.s",
    ]);
    expect(checkCustomFields({ n: Number.NaN }, defs)).toHaveLength(1);
  });
  it("merges key by key, null removing", () => {
    expect(mergeCustomFields({ a: 1, b: 2 }, { b: null, c: 3 })).toEqual({ a: 1, c: 3 });
  });
});
