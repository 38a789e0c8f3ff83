import { describe, expect, it } from "vitest";
import { applyPatch, emptyContact, fillForUpsert, fold, phoneDigits, sameState } from "./contacts.js";

const base = () => ({
  ...emptyContact(),
  name: "Ana",
  phone: "+55 11 9999-0000",
  tags: ["a"],
  customFields: { plan: "free" },
});

describe("upsert fill rules (docs/api/contacts.md §POST /contacts (create or update: upsert))", () => {
  it("the name only fills an empty name", () => {
    expect(fillForUpsert(base(), { name: "Other" }, { dropEmail: false }).name).toBe("Ana");
    expect(fillForUpsert({ ...base(), name: null }, { name: "Other" }, { dropEmail: false }).name).toBe(
      "Other",
    );
    expect(fillForUpsert({ ...base(), name: "" }, { name: "Other" }, { dropEmail: false }).name).toBe(
      "Other",
    );
  });
  it("tags are a set union, in first-seen order", () => {
    expect(fillForUpsert(base(), { tags: ["b", "a", "b"] }, { dropEmail: false }).tags).toEqual(["a", "b"]);
  });
  it("absent, null or empty values erase nothing", () => {
    const next = fillForUpsert(
      { ...base(), company: "Co" },
      { company: "", notes: null, customFields: { plan: null } },
      { dropEmail: false },
    );
    expect(next.company).toBe("Co");
    expect(next.customFields).toEqual({ plan: "free" });
  });
  it("customFields merge key by key; other fields are set when a value is sent", () => {
    const next = fillForUpsert(
      base(),
      { customFields: { seats: 2 }, role: "CEO", utm: { source: "g" } },
      { dropEmail: false },
    );
    expect(next).toMatchObject({
      customFields: { plan: "free", seats: 2 },
      role: "CEO",
      utm: { source: "g" },
    });
  });
  it("dropEmail leaves the e-mail out", () => {
    expect(fillForUpsert(base(), { email: "x@y.z" }, { dropEmail: true }).email).toBeNull();
  });
});

describe("PATCH rules (docs/api/contacts.md §PATCH /contacts/{id})", () => {
  it("absent = untouched, null = cleared, tags replaced", () => {
    const next = applyPatch({ ...base(), company: "Co" }, { company: null, tags: ["z"] });
    expect(next).toMatchObject({ name: "Ana", company: null, tags: ["z"] });
  });
  it("customFields and utm merge, a null value removing the key; null for the whole object clears it", () => {
    const c = { ...base(), utm: { source: "s", medium: "m" } };
    expect(applyPatch(c, { customFields: { plan: null, seats: 1 }, utm: { medium: null } })).toMatchObject({
      customFields: { seats: 1 },
      utm: { source: "s" },
    });
    expect(applyPatch(c, { customFields: null, utm: null })).toMatchObject({ customFields: {}, utm: {} });
  });
  it("a patch that changes nothing is recognised as such (no event, no updatedAt)", () => {
    expect(sameState(base(), applyPatch(base(), { name: "Ana" }))).toBe(true);
    expect(sameState(base(), applyPatch(base(), { name: "Bia" }))).toBe(false);
  });
});

describe("matching keys", () => {
  it("phones compare by digits; query folding drops case and accents", () => {
    expect(phoneDigits("+55 (11) 9999-0000")).toBe("551199990000");
    expect(phoneDigits("abc")).toBeNull();
    expect(fold("JOÃO Ção Ñandú")).toBe("joao cao nandu");
  });
});
