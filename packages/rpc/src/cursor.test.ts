import { afterEach, describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, useCursorKeys } from "./cursor.js";
import { describeError } from "./errors.js";

describe("keyset cursors (docs/api/conventions.md §Lists and pagination)", () => {
  const filters = { status: "active", tag: "vip" };

  it("round-trips the position of the last item", () => {
    const c = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_1"]);
    expect(c).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
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

describe("docs/api/conventions.md §Lists and pagination: cursors are signed, so a forged position is invalid_cursor", () => {
  const filters = { workspaceId: "ws_1" };
  const shape: Array<"timestamp" | "string"> = ["timestamp", "string"];
  const oldKey = "old-key-0123456789abcdef";
  const newKey = "new-key-0123456789abcdef";
  const warnings: string[] = [];
  const warn = (m: string) => warnings.push(m);
  afterEach(() => useCursorKeys(undefined, () => {}));
  const codeOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return describeError(err).code;
    }
    return "accepted";
  };

  it("a cursor re-encoded with another position, its tag kept, is invalid_cursor", () => {
    useCursorKeys([newKey], warn);
    const c = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_1"]);
    const [payload, tag] = c.split(".");
    const decoded = JSON.parse(Buffer.from(payload!, "base64url").toString());
    for (const p of [
      ["2026-11-22T10:00:00.000Z", "ct_0"],
      ["2020-01-01T00:00:00.000Z", "ct_1"],
    ]) {
      const forged = `${Buffer.from(JSON.stringify({ ...decoded, p })).toString("base64url")}.${tag}`;
      expect(codeOf(() => decodeCursor(forged, "contacts", filters, shape))).toBe("invalid_cursor");
    }
    // Without its tag, or with a tag cut short, the same cursor is refused too.
    expect(codeOf(() => decodeCursor(payload!, "contacts", filters, shape))).toBe("invalid_cursor");
    expect(codeOf(() => decodeCursor(c.slice(0, -2), "contacts", filters, shape))).toBe("invalid_cursor");
  });

  it("a cursor signed with a key the process does not hold is invalid_cursor", () => {
    useCursorKeys([oldKey], warn);
    const c = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_1"]);
    useCursorKeys([newKey], warn);
    expect(codeOf(() => decodeCursor(c, "contacts", filters, shape))).toBe("invalid_cursor");
  });

  it("rotation: with the new key first, a cursor of the old key still reads, and new cursors use the new key", () => {
    useCursorKeys([oldKey], warn);
    const inFlight = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_1"]);
    useCursorKeys([newKey, oldKey], warn);
    expect(decodeCursor(inFlight, "contacts", filters, shape)).toEqual(["2026-11-22T10:00:00.000Z", "ct_1"]);
    const fresh = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_2"]);
    useCursorKeys([newKey], warn);
    expect(decodeCursor(fresh, "contacts", filters, shape)).toEqual(["2026-11-22T10:00:00.000Z", "ct_2"]);
    useCursorKeys([oldKey], warn);
    expect(codeOf(() => decodeCursor(fresh, "contacts", filters, shape))).toBe("invalid_cursor");
  });

  it("without keys, the development key signs and a warning says so", () => {
    warnings.length = 0;
    useCursorKeys([newKey], warn);
    expect(warnings).toEqual([]);
    useCursorKeys(undefined, warn);
    expect(warnings).toEqual([expect.stringMatching(/CURSOR_KEYS/)]);
    const c = encodeCursor("contacts", filters, ["2026-11-22T10:00:00.000Z", "ct_1"]);
    expect(decodeCursor(c, "contacts", filters, shape)).toEqual(["2026-11-22T10:00:00.000Z", "ct_1"]);
  });
});

describe("error mapping (docs/api/conventions.md §Errors)", () => {
  it("an unknown error is a bare 500 that says nothing about its cause", () => {
    expect(describeError(new Error("relation contacts does not exist at 10.0.0.3"))).toEqual({
      code: "internal",
      status: 500,
      message: "internal error",
    });
  });
});
