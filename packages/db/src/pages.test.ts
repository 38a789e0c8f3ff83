import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Sql } from "./client.js";
import { pageLimit } from "./pages.js";

// One connection, so that pg_prepared_statements (a view of the session) sees every statement run.
let sql: Sql;
beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    `funil_${process.env.FUNIL_TEST_ENV}_deals_db`,
    { max: 1 },
  );
  await sql`create table if not exists page_things (workspace_id text not null, id text primary key, at timestamptz not null)`;
  await sql`create index if not exists page_things_by_at on page_things (workspace_id, at, id)`;
  await sql`truncate page_things`;
  await sql`insert into page_things ${sql(
    Array.from({ length: 300 }, (_, i) => ({
      workspaceId: `ws_${i % 3}`,
      id: `pt_${i}`,
      at: new Date(i * 1000),
    })),
  )}`;
});
afterAll(async () => {
  await sql.end({ timeout: 5 });
});

const page = (ws: string, take: number, planned = true) =>
  sql<
    { id: string }[]
  >`select id from page_things where workspace_id = ${ws} order by at, id ${pageLimit(sql, take, planned)}`;

const kept = async (limitText: string) => {
  const [row] = await sql<{ genericPlans: number; customPlans: number }[]>`
    select generic_plans::int, custom_plans::int from pg_prepared_statements
    where statement like ${`%from page_things where workspace_id = $1 order by at, id ${limitText}`}`;
  return row;
};

describe("pageLimit (a keyset page's limit)", () => {
  it("a page of a usual size is a statement of its own whose plan PostgreSQL keeps: not planned at every call", async () => {
    for (let i = 0; i < 10; i++) expect(await page(`ws_${i % 3}`, 51)).toHaveLength(51);
    const plans = await kept("limit 51");
    expect(plans!.customPlans).toBeLessThanOrEqual(5);
    expect(plans!.genericPlans).toBeGreaterThanOrEqual(5);
  });

  it("any other size stays a parameter, so what clients ask cannot multiply the statements; so does a page whose filter wants its values planned", async () => {
    expect(await page("ws_0", 38)).toHaveLength(38);
    expect(await page("ws_0", 51, false)).toHaveLength(51);
    expect(await kept("limit 38")).toBeUndefined();
    expect(await kept("limit $2")).toBeDefined();
  });
});
