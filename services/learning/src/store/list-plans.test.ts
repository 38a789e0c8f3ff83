import { fileURLToPath } from "node:url";
import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql } from "@funil/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planOf as sharedPlanOf } from "../../../../tests/plans.js";
import { type LearnerFilters, learnerStore } from "./learners.js";

/**
 * The learner list's plans (docs/operations.md §Database): the store's own statements on 20 000 learners.
 * A page of a usual size is a statement whose plan PostgreSQL keeps (pageLimit); the plan it keeps, the
 * generic one, must still use an index, never a sequential scan and a sort of every learner. A text
 * search stays planned with its pattern.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_plans`);
const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let sql: Sql;

beforeAll(async () => {
  sql = await openDatabase(url, names.database("learning"), { max: 1 });
  await migrate(sql, fileURLToPath(new URL("../../migrations", import.meta.url)));
  await sql`truncate users, enrollments, certificates`;
  await sql`
    insert into users (id, name, email, created_at, search, last_login_at, last_active_at, learner)
    select 'u' || lpad(i::text, 6, '0'), 'Aluno ' || i, 'aluno' || i || '@x.test',
           timestamptz '2025-01-01' + i * interval '1 minute', 'aluno ' || i || ' aluno' || i || '@x.test',
           case when i % 20 <> 0 then timestamptz '2025-06-01' + (i % 500) * interval '1 hour' end,
           case when i % 20 <> 0 then timestamptz '2025-06-01' + (i % 500) * interval '1 hour' end,
           i % 11 <> 10
    from generate_series(1, 22000) i`;
  await sql`
    insert into enrollments (user_id, course_id, status, progress_pct, started_at, completed_at)
    select u.id, 'c' || k, 'active', 40, u.created_at, case when k = 1 then u.created_at end
    from users u, generate_series(1, 2) k where u.learner`;
  await sql`analyze`;
}, 120_000);
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

/** The statement `run` sends and its plan: the kept generic plan when `kept`, else the one for its values. */
const planOf = (run: (s: Sql) => Promise<unknown>, kept: boolean) =>
  sharedPlanOf(`${url.replace(/\/[^/]*$/, "")}/${names.database("learning")}`, /from users u/, run, kept);

const after: [Date, string] = [new Date("2025-01-05T00:00:00.000Z"), "u005760"];
const cases: Array<[string, LearnerFilters, [Date, string] | undefined, RegExp]> = [
  ["GET /platform/users (first page)", {}, undefined, /Index Scan using users_learners/],
  ["GET /platform/users (a later page: cursor)", {}, after, /Index Scan using users_learners/],
  [
    "GET /platform/users?activeSince=",
    { activeSince: new Date("2025-06-20T00:00:00.000Z") },
    undefined,
    /Index Scan using users_(learners|active)/,
  ],
];

describe("learner list plans (EXPLAIN)", () => {
  for (const [name, filters, position, index] of cases)
    it(`${name}: the plan PostgreSQL keeps for a page of 50 uses its index, no sequential scan of users`, async () => {
      const { query, plan } = await planOf((s) => learnerStore(s).list(filters, 51, position), true);
      expect(query).toMatch(/limit 51\s/);
      expect(plan, plan).toMatch(index);
      expect(plan, plan).not.toMatch(/Seq Scan on users/);
    });

  it("GET /platform/users?q=: the page size stays a parameter, so each search is planned with its pattern", async () => {
    const { query } = await planOf((s) => learnerStore(s).list({ q: "aluno12345" }, 51), false);
    expect(query).toMatch(/limit \$\d+\s/);
  });

  it("a later page of 50 is a statement whose plan PostgreSQL keeps after five calls, not planned at every call", async () => {
    const store = learnerStore(sql);
    for (let i = 0; i < 8; i++) expect(await store.list({}, 51, after)).toHaveLength(51);
    const [plans] = await sql<{ genericPlans: number }[]>`
      select generic_plans::int from pg_prepared_statements
      where statement like '%from users u%(u.created_at, u.id) > ($1, $2)%limit 51%'
        and statement not like '%pg_prepared_statements%'`;
    expect(plans?.genericPlans).toBeGreaterThanOrEqual(3);
  });
});
