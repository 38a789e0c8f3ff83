import { create } from "@bufbuild/protobuf";
import { PipelineSchema } from "@funil/contracts";
import { describeError, toApiJson } from "@funil/rpc";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { pageOf, sendWholeJsonList } from "./whole-list.js";

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

describe("a whole list its service answers as JSON items (api_json) pages as one answered as messages", () => {
  const pipelines = ["a", "b", "c"].map((id) =>
    create(PipelineSchema, {
      id: `pl_${id}`,
      name: `Pipeline ${id}`,
      stages: [{ id: `stg_${id}`, name: "Novo", position: 0 }],
    }),
  );
  /** What GET /pipelines answers for `res` at `query`, through Fastify as the route sends it. */
  async function answer(res: Parameters<typeof sendWholeJsonList>[2], query: string) {
    const app = Fastify({ logger: false });
    app.get("/pipelines", (req, reply) => {
      const { cursor, limit } = req.query as { cursor?: string; limit?: string };
      return sendWholeJsonList(reply, PipelineSchema, res, {
        list: "pipelines",
        workspaceId: "ws_1",
        cursor,
        limit: Number(limit ?? 500),
      });
    });
    const reply = await app.inject({ url: `/pipelines${query}` });
    await app.close();
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
    return reply.json() as { data: unknown[]; nextCursor: string | null };
  }
  const asJson = {
    data: [],
    ids: pipelines.map((p) => p.id),
    itemsJson: pipelines.map((p) => JSON.stringify(toApiJson(PipelineSchema, p))),
  };
  // A copy of the service from before api_json (during a roll) answers messages.
  const asMessages = { data: pipelines, ids: [], itemsJson: [] };

  it("the same pages and cursors from either answer, each page's items as the API writes them", async () => {
    const first = await answer(asJson, "?limit=2");
    expect(await answer(asMessages, "?limit=2")).toEqual(first);
    expect(first.data).toEqual(pipelines.slice(0, 2).map((p) => toApiJson(PipelineSchema, p)));
    const cursor = `?limit=2&cursor=${encodeURIComponent(first.nextCursor!)}`;
    const second = await answer(asJson, cursor);
    expect(await answer(asMessages, cursor)).toEqual(second);
    expect(second).toEqual({ data: [toApiJson(PipelineSchema, pipelines[2]!)], nextCursor: null });
  });

  it("an empty list is one empty page", async () => {
    expect(await answer({ data: [], ids: [], itemsJson: [] }, "")).toEqual({ data: [], nextCursor: null });
  });
});
