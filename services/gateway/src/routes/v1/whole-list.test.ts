import { describeError } from "@funil/rpc";
import { describe, expect, it } from "vitest";
import { pageOf } from "./whole-list.js";

const items = ["a", "b", "c", "d", "e"].map((id) => ({ id }));
const base = { list: "members", workspaceId: "ws_1", key: (i: { id: string }) => i.id };
const ids = (page: { data: Array<{ id: string }> }) => page.data.map((i) => i.id);

describe("docs/api/conventions.md §Lists and pagination: the short lists page by limit and a signed cursor", () => {
  it("a list under the limit is one page with nextCursor null", () => {
    expect(pageOf(items, { ...base, limit: 500 })).toEqual({ data: items, nextCursor: null });
    expect(pageOf(items, { ...base, limit: 5 }).nextCursor).toBeNull();
  });

  it("pages follow one another without a gap or a repeat", () => {
    const first = pageOf(items, { ...base, limit: 2 });
    const second = pageOf(items, { ...base, limit: 2, cursor: first.nextCursor! });
    const third = pageOf(items, { ...base, limit: 2, cursor: second.nextCursor! });
    expect([ids(first), ids(second), ids(third)]).toEqual([["a", "b"], ["c", "d"], ["e"]]);
    expect(third.nextCursor).toBeNull();
  });

  it("an item gone between two pages skips nobody: an earlier one, or the page's last one", () => {
    const first = pageOf(items, { ...base, limit: 2 });
    const withoutA = items.filter((i) => i.id !== "a");
    expect(ids(pageOf(withoutA, { ...base, limit: 2, cursor: first.nextCursor! }))).toEqual(["c", "d"]);
    const withoutB = items.filter((i) => i.id !== "b");
    expect(ids(pageOf(withoutB, { ...base, limit: 2, cursor: first.nextCursor! }))).toEqual(["c", "d"]);
  });

  it("a cursor of another workspace, list or filter is invalid_cursor", () => {
    const cursor = pageOf(items, { ...base, limit: 2 }).nextCursor!;
    for (const other of [
      { ...base, workspaceId: "ws_2" },
      { ...base, list: "pipelines" },
      { ...base, filters: { entity: "contact" } },
    ]) {
      let error: unknown;
      try {
        pageOf(items, { ...other, limit: 2, cursor });
      } catch (err) {
        error = err;
      }
      expect(describeError(error).code).toBe("invalid_cursor");
    }
  });
});
