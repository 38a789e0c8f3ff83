import { cursor, limit, z } from "@funil/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";
import { getById, keysetList } from "./lists.js";

interface Thing {
  id: string;
  tag: string;
  at: Date;
}

let sql: Sql;
beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    `funil_${process.env.FUNIL_TEST_ENV}_deals_db`,
    { max: 1 },
  );
  await sql`create table if not exists list_things (workspace_id text not null, id text primary key, tag text not null, at timestamptz not null)`;
  await sql`truncate list_things`;
  await sql`insert into list_things ${sql(
    Array.from({ length: 9 }, (_, i) => ({
      workspaceId: i < 7 ? "ws_a" : "ws_b",
      id: `th_${i}`,
      tag: i % 2 === 0 ? "even" : "odd",
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
    })),
  )}`;
});
afterAll(async () => {
  await sql.end({ timeout: 5 });
});

const query = z.strictObject({ tag: z.string().optional(), cursor: cursor.optional(), limit: limit(3) });
const things = keysetList({
  list: "things",
  query,
  defaultLimit: 3,
  bind: (given) => ({ tag: given.tag ?? "even" }),
  sortKey: (t: Thing) => t.at,
  fetch: (workspaceId, { tag }, take, after) => sql<Thing[]>`
    select id, tag, at from list_things
    where workspace_id = ${workspaceId} and tag = ${tag}
      ${after ? sql`and (at, id) > (${after[0]}, ${after[1]})` : sql``}
    order by at, id limit ${take}`,
  toMessage: (t) => t.id,
});
const getThing = getById(
  "thing",
  async (workspaceId, id) =>
    (
      await sql<
        Thing[]
      >`select id, tag, at from list_things where workspace_id = ${workspaceId} and id = ${id}`
    )[0],
  (t) => ({ thing: t.id }),
);

/** Every page of a list, following nextCursor. */
async function walk(workspaceId: string, plain: Record<string, unknown>) {
  const pages: string[][] = [];
  let next: string | undefined;
  do {
    const page = await things(workspaceId, { ...plain, cursor: next });
    pages.push(page.data);
    next = page.nextCursor;
  } while (next);
  return pages;
}

describe("docs/api/conventions.md §Lists and pagination: the list skeleton of every service (keysetList)", () => {
  it("§Lists and pagination: every page in the list's order, the workspace's rows only, no cursor after the last", async () => {
    expect(await walk("ws_a", { limit: 2 })).toEqual([
      ["th_0", "th_2"],
      ["th_4", "th_6"],
    ]);
    expect(await walk("ws_a", { tag: "odd" })).toEqual([["th_1", "th_3", "th_5"]]);
    expect(await walk("ws_b", { tag: "odd" })).toEqual([["th_7"]]);
  });

  it("§Lists and pagination: a cursor is bound to its filters (defaults filled in) and its workspace", async () => {
    const { nextCursor } = await things("ws_a", { limit: 1 });
    // The default filter and the same filter given are one list.
    expect((await things("ws_a", { tag: "even", limit: 1, cursor: nextCursor })).data).toEqual(["th_2"]);
    await expect(things("ws_a", { tag: "odd", cursor: nextCursor })).rejects.toMatchObject({
      code: "invalid_cursor",
    });
    await expect(things("ws_b", { cursor: nextCursor })).rejects.toMatchObject({ code: "invalid_cursor" });
  });

  it("§Lists and pagination: a query its schema refuses is validation_failed naming the query's field", async () => {
    await expect(things("ws_a", { limit: 501 })).rejects.toMatchObject({
      code: "validation_failed",
      details: [expect.objectContaining({ path: "query.limit" })],
    });
    await expect(things("ws_a", { size: 1 })).rejects.toMatchObject({ code: "validation_failed" });
  });
});

describe("docs/api/conventions.md §Errors: the get skeleton of every service (getById)", () => {
  it("§Errors: the workspace's row as the reply; another workspace's id or an unknown one is not_found", async () => {
    expect(await getThing({ workspaceId: "ws_a", id: "th_3" })).toEqual({ thing: "th_3" });
    await expect(getThing({ workspaceId: "ws_a", id: "th_8" })).rejects.toMatchObject({ code: "not_found" });
    await expect(getThing({ workspaceId: "ws_a", id: "th_none" })).rejects.toMatchObject({
      code: "not_found",
    });
  });

  it("§Errors: an id the path schema refuses is validation_failed, before any read", async () => {
    await expect(getThing({ workspaceId: "ws_a", id: "" })).rejects.toMatchObject({
      code: "validation_failed",
      details: [expect.objectContaining({ path: "path.id" })],
    });
  });
});
