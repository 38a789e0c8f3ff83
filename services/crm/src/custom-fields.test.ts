import { describe, expect, it } from "vitest";
import { checkCustomFields, type FieldDefinition, mergeCustomFields } from "./custom-fields.js";

const defs: FieldDefinition[] = [
  { fieldKey: "t", type: "text", options: [] },
  { fieldKey: "n", type: "number", options: [] },
  { fieldKey: "b", type: "boolean", options: [] },
  { fieldKey: "d", type: "date", options: [] },
  { fieldKey: "s", type: "select", options: ["x", "y"] },
];

describe("customFields validation (API §5)", () => {
  it("accepts values of each definition's type, and null (remove)", () => {
    expect(checkCustomFields({ t: "hi", n: 1.5, b: false, d: "2026-01-31", s: "y" }, defs)).toEqual([]);
    expect(checkCustomFields({ d: "2026-01-31T10:00:00Z", t: null }, defs)).toEqual([]);
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
