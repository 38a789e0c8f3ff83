import { writeFileSync } from "node:fs";
import { loadConfig, systemClock } from "@funil/config";
import type { Sql } from "@funil/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { planOf } from "../../../../tests/plans.js";
import { schedulingConfig } from "../config.js";
import { start } from "../server.js";
import { type AppointmentFilters, listQuery } from "./appointments.js";

/**
 * GET /appointments' plans (docs/api/conventions.md §Lists and pagination: the cost of a page does not
 * grow with its depth): the store's own list statement, EXPLAIN ANALYZEd on 150 000 meetings over 51
 * workspaces (75 000 in the one queried, 1 in 10 canceled, 5 calendars each). Each filter walks the index
 * of its filter in (start_at, id) order, with no sequential scan and no sort of the workspace's meetings;
 * a recent createdAfter or updatedAfter reads its few rows by its own index and sorts only those. A page
 * of a usual size is a statement whose plan PostgreSQL keeps (pageLimit), and the kept plan walks as the
 * one made for the values does; createdAfter and updatedAfter are planned at every call.
 * `EXPLAIN_OUT=bench/EXPLAIN-scheduling.md` writes the plans down.
 */
let scheduling: Awaited<ReturnType<typeof start>>;
let databaseUrl: string;
const WS = "ws_explain";
/** The default page (limit 100) and its extra row. */
const TAKE = 101;
/** Meetings start every 20 minutes from 2026-01-01 (the generated data below). */
const startOf = (i: number) => new Date(Date.UTC(2026, 0, 1) + (i - 1) * 20 * 60_000);
const at = (s: string) => new Date(s);

beforeAll(async () => {
  scheduling = await start(
    loadConfig(schedulingConfig, {
      ...process.env,
      FUNIL_ENV: `${process.env.FUNIL_TEST_ENV ?? "test"}_explain`,
      SCHEDULING_PORT: "0",
      CRM_URL: inject("crmUrl"),
      LOG_LEVEL: "warn",
    }),
    systemClock,
  );
  const sql = scheduling.sql;
  const [current] = await sql<{ db: string }[]>`select current_database() as db`;
  const url = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
  url.pathname = `/${current!.db}`;
  databaseUrl = url.href;
  await sql.begin(async (tx) => {
    await tx`truncate appointments, day_counts, calendars`;
    await tx`
      insert into calendars (id, workspace_id, key, name, duration_min, daily_cap, timezone, slot_interval_min,
        assignee_user_ids, availability, created_at)
      select 'calx_' || w || '_' || k, case when w = 0 then ${WS} else 'ws_x' || w end, 'cal' || k, 'C', 15, 100,
             'UTC', 20, array['usrx_0'], '[]', now()
      from generate_series(0, 50) w, generate_series(0, 4) k`;
    // Half the meetings in one workspace, the rest spread over 50 others; each booked 1 to 60 days ahead.
    await tx`
      insert into appointments (id, workspace_id, calendar_id, calendar_key, contact_id, start_at, end_at, local_day,
        assignee_user_id, status, outcome, outcome_at, canceled_at, created_by_source, created_at, updated_at)
      select 'apx_' || lpad(i::text, 7, '0'), case when w = 0 then ${WS} else 'ws_x' || w end,
             'calx_' || w || '_' || (i % 5), 'cal' || (i % 5), 'ctx_' || (i % 500),
             ts, ts + interval '15 minutes', (ts at time zone 'UTC')::date, 'usrx_' || (i % 20),
             case when i % 10 = 0 then 'canceled' else 'scheduled' end,
             case when i % 10 = 3 then 'realizada' when i % 50 = 7 then 'noshow' end,
             case when i % 10 = 3 or i % 50 = 7 then ts + interval '1 hour' end,
             case when i % 10 = 0 then made + interval '1 day' end, 'api', made,
             case when i % 10 = 0 then made + interval '1 day'
                  when i % 10 = 3 or i % 50 = 7 then ts + interval '1 hour' else made end
      from (select i, w, ts, ts - (1 + (i * 7919) % 60) * interval '1 day' as made
            from (select i, case when i <= 75000 then 0 else 1 + i % 50 end as w,
                         timestamptz '2026-01-01' + ((i - 1) % 75000) * interval '20 minutes' as ts
                  from generate_series(1, 150000) i) g) g`;
  });
  await sql`analyze`;
}, 180_000);

afterAll(async () => {
  await scheduling?.stop();
});

type Case = {
  name: string;
  filters: Partial<AppointmentFilters>;
  after?: [Date, string];
  /** The indexes that serve the page: either of two when both walk (start_at, id) in order. */
  indexes: string[];
};

const byStart = ["appointments_by_start", "appointments_by_start_all"];
const byCalendar = ["appointments_by_calendar", "appointments_by_calendar_all"];
const cursor: [Date, string] = [startOf(40001), "apx_0040001"];
const day = { from: at("2027-03-01T00:00:00Z"), to: at("2027-03-02T00:00:00Z") };
const cases: Case[] = [
  { name: "GET /appointments (first page)", filters: {}, indexes: byStart },
  { name: "GET /appointments (a later page: cursor)", filters: {}, after: cursor, indexes: byStart },
  {
    name: "GET /appointments?status=all",
    filters: { status: "all" },
    indexes: ["appointments_by_start_all"],
  },
  {
    name: "GET /appointments?status=all (a later page: cursor)",
    filters: { status: "all" },
    after: cursor,
    indexes: ["appointments_by_start_all"],
  },
  {
    name: "GET /appointments?status=canceled",
    filters: { status: "canceled" },
    indexes: ["appointments_by_start"],
  },
  { name: "GET /appointments?calendarKey=", filters: { calendarKey: "cal2" }, indexes: byCalendar },
  {
    name: "GET /appointments?calendarKey=&status=all",
    filters: { calendarKey: "cal2", status: "all" },
    indexes: ["appointments_by_calendar_all"],
  },
  { name: "GET /appointments?from=&to= (one day)", filters: day, indexes: ["appointments_by_start"] },
  {
    name: "GET /appointments?calendarKey=&from=&to= (one day of a calendar: an agenda's poll)",
    filters: { calendarKey: "cal2", ...day },
    indexes: ["appointments_by_calendar"],
  },
  {
    name: "GET /appointments?outcome=noshow (1 meeting in 50)",
    filters: { outcome: "noshow" },
    indexes: ["appointments_by_outcome"],
  },
  {
    name: "GET /appointments?outcome=realizada (1 meeting in 10)",
    filters: { outcome: "realizada" },
    indexes: ["appointments_by_outcome"],
  },
  {
    name: "GET /appointments?createdAfter= (recent: a poll)",
    filters: { createdAfter: at("2028-10-28T00:00:00Z") },
    indexes: ["appointments_by_created"],
  },
  {
    name: "GET /appointments?updatedAfter=&status=all (recent: a poll)",
    filters: { updatedAfter: at("2028-10-28T00:00:00Z"), status: "all" },
    indexes: ["appointments_by_updated"],
  },
  {
    name: "GET /appointments?createdAfter= (long ago: every meeting)",
    filters: { createdAfter: at("2025-06-01T00:00:00Z") },
    indexes: byStart,
  },
];

const statement = (sql: Sql, c: Case) =>
  listQuery(sql, WS, { status: "scheduled", ...c.filters }, TAKE, c.after);
/** Kept for a usual page size: every filter but createdAfter and updatedAfter (appointments.ts). */
const planned = (c: Case) => !c.filters.createdAfter && !c.filters.updatedAfter;
const planText = (rows: readonly object[]) => rows.map((r) => Object.values(r)[0] as string).join("\n");
/** The indexes a plan scans. */
const indexesOf = (plan: string) =>
  [...plan.matchAll(/Index (?:Only )?Scan (?:Backward )?using (\w+)/g)].map((m) => m[1]);
/** A plan's nodes, without the indexes they use or the values in their conditions. */
const shape = (plan: string) =>
  plan.match(/(Limit|Sort|Seq Scan|(Bitmap )?Index (Only )?Scan( Backward)?|Bitmap Heap Scan)/g);
/** The most rows any node of an EXPLAIN ANALYZE returned, or read and dropped. */
const rowsTouched = (plan: string) =>
  Math.max(
    ...[...plan.matchAll(/rows=(\d+)|Rows Removed by \w+( \w+)?: (\d+)/g)].map((m) => Number(m[1] ?? m[3])),
  );

/** The page walks one of its indexes, with no sequential scan, and reads a page's worth of rows. */
function expectServed(c: Case, plan: string) {
  const used = indexesOf(plan);
  expect(used.length, `${c.name}\n${plan}`).toBe(1);
  expect(c.indexes, `${c.name}\n${plan}`).toContain(used[0]);
  expect(plan, c.name).not.toMatch(/Seq Scan/);
  // A sort only of the few rows a recent createdAfter or updatedAfter reads by its own index.
  if (planned(c)) expect(plan, c.name).not.toMatch(/Sort/);
}

describe("GET /appointments plans (EXPLAIN)", () => {
  it("docs/api/conventions.md §Lists and pagination: every filter of GET /appointments walks its index in (start_at, id) order, never a sequential scan or a sort of the workspace, in the plan made for its values and in the plan PostgreSQL keeps for a page of 100", async () => {
    const sql = scheduling.sql;
    const report: string[] = [];
    for (const c of cases) {
      const plan = planText(
        await sql`explain (analyze, costs off, timing on, summary on) ${statement(sql, c)}`,
      );
      expectServed(c, plan);
      expect(rowsTouched(plan), `${c.name}\n${plan}`).toBeLessThan(3000);
      let entry = `### ${c.name}\n\nindex: \`${c.indexes.join("` or `")}\`\n\n\`\`\`\n${plan}\n\`\`\`\n`;
      const run = (probe: Sql) => statement(probe, c);
      if (planned(c)) {
        const kept = await planOf(databaseUrl, /from appointments/, run, true);
        expect(kept.query, c.name).toMatch(/limit 101$/);
        expectServed(c, kept.plan);
        expect(shape(kept.plan), `${c.name}\n${kept.plan}`).toEqual(shape(plan));
        entry += `\nthe plan PostgreSQL keeps for the statement (generic):\n\n\`\`\`\n${kept.plan}\n\`\`\`\n`;
      } else {
        const sent = await planOf(databaseUrl, /from appointments/, run, false);
        expect(sent.query, c.name).toMatch(/limit \$\d+$/);
        entry += "\nsent unnamed: planned for its values at every call\n";
      }
      report.push(entry);
    }
    if (process.env.EXPLAIN_OUT)
      writeFileSync(
        process.env.EXPLAIN_OUT,
        "# EXPLAIN of GET /appointments\n\n" +
          "Generated by `EXPLAIN_OUT=bench/EXPLAIN-scheduling.md npx vitest run services/scheduling/src/store/explain.test.ts`: " +
          "the store's own list statement (services/scheduling/src/store/appointments.ts, `listQuery`) for a page of 100 " +
          "(101 rows asked), EXPLAIN ANALYZE on PostgreSQL with 150 000 meetings over 51 workspaces (75 000 in the " +
          "workspace queried, 1 in 10 canceled, 5 calendars each), and for a page of a usual size the plan PostgreSQL " +
          "keeps for the statement (its generic plan). Every page walks the index of its filter in (start_at, id) order, " +
          "with no sort and no sequential scan, in the same index in both plans; the test fails if one does not. In the " +
          "workspace queried, which holds half the table, PostgreSQL makes the first page's plan at each call rather " +
          "than keep it (the plan for these values looks far cheaper than the generic one); in a workspace of the usual " +
          "size it keeps it. createdAfter and updatedAfter are the exception: a recent one reads its " +
          "few rows by created_at or updated_at and sorts only those, an old one walks start_at and filters, so those " +
          "two are sent unnamed and planned for their values at every call.\n\n" +
          report.join("\n"),
      );
  }, 120_000);

  it("a page of 100 is a statement whose plan PostgreSQL keeps after five calls; a createdAfter poll is planned at every call", async () => {
    const probe = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      // The first page in a workspace of the usual size: in WS, which holds half the table, the plan made
      // for the values looks so much cheaper than the generic one that PostgreSQL makes it at each call.
      const page = (workspaceId: string, f: Partial<AppointmentFilters>) =>
        listQuery(probe, workspaceId, { status: "scheduled", ...f }, TAKE);
      for (let i = 0; i < 8; i++) {
        expect(await page(WS, { calendarKey: "cal2", ...day })).not.toHaveLength(0);
        expect(await page("ws_x7", {})).toHaveLength(TAKE);
        expect(await page(WS, { createdAfter: at("2028-10-28T00:00:00Z") })).not.toHaveLength(0);
      }
      const statements = await probe<{ statement: string; genericPlans: number }[]>`
        select statement, generic_plans::int as "genericPlans" from pg_prepared_statements
        where statement like '%from appointments%'`;
      const kept = (part: string) => statements.find((s) => s.statement.includes(part));
      expect(kept("calendar_key = $")?.genericPlans).toBeGreaterThanOrEqual(3);
      expect(kept("status = $2 order by")?.genericPlans).toBeGreaterThanOrEqual(3);
      expect(kept("created_at >")).toBeUndefined();
    } finally {
      await probe.end({ timeout: 5 });
    }
  });
});
