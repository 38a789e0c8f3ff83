import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "./cursor.js";
import { describeError } from "./errors.js";

describe("keyset cursors (API §4)", () => {
  const filters = { status: "active", tag: "vip" };

  it("round-trips the position of the last item", () => {
    const c = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_1"]);
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(c, "contacts", filters, ["timestamp", "string"])).toEqual([
      "2026-11-22T10:00:00.000Z",
      "ct_1",
    ]);
  });

  it("binds the filters: undefined and absent filters are the same, any other change is invalid_cursor", () => {
    const c = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_1"]);
    expect(() =>
      decodeCursor(c, "contacts", { ...filters, query: undefined }, ["timestamp", "string"]),
    ).not.toThrow();
    for (const other of [
      { status: "archived", tag: "vip" },
      { status: "active" },
      { ...filters, email: "a@b.c" },
    ]) {
      expect(() => decodeCursor(c, "contacts", other, ["timestamp", "string"])).toThrow(/cursor/);
    }
  });

  it("rejects a cursor of another list, a forged shape, or garbage with invalid_cursor", () => {
    const c = encodeCursor("deals", filters, ["2026-11-22T10:00:00.000Z", "op_1"]);
    const bad = [
      c,
      "",
      "***",
      Buffer.from("[]").toString("base64url"),
      encodeCursor("contacts", filters, ["not a date", "ct_1"]),
      encodeCursor("contacts", filters, ["0000-01-01T00:00:00.000Z", "ct_1"]),
      encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z"]),
      encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", 5]),
      "A".repeat(5000),
    ];
    for (const cursor of bad) {
      let error: unknown;
      try {
        decodeCursor(cursor, "contacts", filters, ["timestamp", "string"]);
      } catch (err) {
        error = err;
      }
      expect(describeError(error)).toMatchObject({ code: "invalid_cursor", status: 400 });
    }
  });
});

describe("error mapping (API §1)", () => {
  it("an unknown error is a bare 500 that says nothing about its cause", () => {
    expect(describeError(new Error("relation contacts does not exist at 10.0.0.3"))).toEqual({
      code: "internal",
      status: 500,
      message: "internal error",
    });
  });
});
