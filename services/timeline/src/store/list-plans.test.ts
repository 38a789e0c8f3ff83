import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql } from "@funil/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planOf } from "../../../../tests/plans.js";
import { migrations } from "../server.js";
import { type InteractionFilters, interactionStore } from "./interactions.js";

/**
 * GET /interactions' plans (docs/operations.md §Database): the store's own statements on 110 000
 * interactions over 11 workspaces. A page of a usual size is a statement whose plan PostgreSQL keeps
 * (pageLimit); the plan it keeps, the generic one, must still walk the index of its filter in the list's
 * order, never a sequential scan or a sort of the workspace's rows. A channel list stays planned with
 * its values.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_plans`);
const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const WS = "ws_plans";
let sql: Sql;

beforeAll(async () => {
  sql = await openDatabase(url, names.database("timeline"), { max: 1 });
  await migrate(sql, migrations);
  await sql`truncate interactions, conversations`;
  await sql`
    insert into interactions (workspace_id, id, kind, channel, direction, actor, user_id, contact_id,
      conversation_id, created_at, preview)
    select case when i <= 60000 then ${WS} else 'ws_other' || (i % 10) end, 'msg:' || i, 'message',
           (array['whatsapp', 'instagram', 'email', 'call', 'note'])[1 + i % 5],
           case when i % 3 = 0 then 'inbound' else 'outbound' end,
           case when i % 3 = 0 then 'contact' when i % 2 = 0 then 'user' else 'automation' end,
           case when i % 3 <> 0 and i % 2 = 0 then 'u' || (i % 50) end, 'ct_' || (i % 600), 'cv_' || (i % 600),
           timestamptz '2025-01-01' + i * interval '1 minute', 'preview ' || i
    from generate_series(1, 110000) i`;
  await sql`
    insert into conversations (workspace_id, id, assignee_user_id, assigned_at)
    select w, 'cv_' || c, 'u' || (c % 50), timestamptz '2025-01-01'
    from (select distinct workspace_id as w from interactions) ws, generate_series(0, 599) c`;
  await sql`analyze`;
}, 120_000);
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

/** The statement the store sends for a page of 50 and the generic plan PostgreSQL keeps for it. */
const keptPlanOf = (filters: InteractionFilters, after?: [Date, string]) =>
  planOf(
    `${url.replace(/\/[^/]*$/, "")}/${names.database("timeline")}`,
    /from interactions i/,
    (probe: Sql) => interactionStore(probe).list(WS, filters, 51, after),
    true,
  );

const cases: Array<[string, InteractionFilters, [Date, string] | undefined, string]> = [
  ["GET /interactions (page 1)", {}, undefined, "interactions_by_created"],
  [
    "GET /interactions (a deep page: cursor)",
    {},
    [new Date("2025-01-20T00:00:00.000Z"), "msg:27360"],
    "interactions_by_created",
  ],
  ["GET /interactions?contactId=", { contactId: "ct_7" }, undefined, "interactions_by_contact"],
  ["GET /interactions?userId=", { userId: "u8" }, undefined, "interactions_by_user"],
];

describe("GET /interactions plans (EXPLAIN)", () => {
  for (const [name, filters, after, index] of cases)
    it(`${name}: the plan PostgreSQL keeps for a page of 50 walks ${index} in order, no sort, no sequential scan`, async () => {
      const { query, plan } = await keptPlanOf(filters, after);
      expect(query).toMatch(/limit 51$/);
      expect(plan, plan).toContain(index);
      expect(plan, plan).not.toMatch(/Seq Scan on interactions|Sort/);
    });

  it("GET /interactions?userId=&channel=: the page size stays a parameter, so the channel list is planned with its values", async () => {
    const { query } = await planOf(
      `${url.replace(/\/[^/]*$/, "")}/${names.database("timeline")}`,
      /from interactions i/,
      (probe: Sql) => interactionStore(probe).list(WS, { userId: "u8", channels: ["whatsapp", "call"] }, 51),
      false,
    );
    expect(query).toMatch(/limit \$\d+$/);
  });

  it("a page of 50 is a statement whose plan PostgreSQL keeps after five calls, not planned at every call", async () => {
    const store = interactionStore(sql);
    for (let i = 0; i < 8; i++) expect(await store.list(WS, { contactId: "ct_5" }, 51)).toHaveLength(51);
    const [plans] = await sql<{ genericPlans: number }[]>`
      select generic_plans::int from pg_prepared_statements
      where statement like '%from interactions i%i.contact_id = $2%limit 51'
        and statement not like '%pg_prepared_statements%'`;
    expect(plans?.genericPlans).toBeGreaterThanOrEqual(3);
  });
});
