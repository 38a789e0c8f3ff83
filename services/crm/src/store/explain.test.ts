import { writeFileSync } from "node:fs";
import { loadConfig, systemClock } from "@funil/config";
import type { Sql } from "@funil/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crmConfig } from "../config.js";
import { start } from "../server.js";
import { contactStore } from "./contacts.js";
import { dealStore } from "./deals.js";
import { funnelStore } from "./funnel.js";
import { pipelineStore } from "./pipelines.js";
import { taskStore } from "./tasks.js";

/**
 * The list queries use indexes that match their filters and order (docs/api/conventions.md §Lists and pagination):
 * the very queries of the stores, EXPLAINed on 70 200 contacts (60 000 more in the workspace queried, 1 in 50
 * archived), 200 000 deals and 100 000 tasks spread over 51 workspaces. `EXPLAIN_OUT=bench/EXPLAIN.md` writes the
 * plans down.
 */
let crm: Awaited<ReturnType<typeof start>>;
const WS = "ws_explain";
const noop = async () => {};

beforeAll(async () => {
  crm = await start(
    loadConfig(crmConfig, {
      ...process.env,
      FUNIL_ENV: `${process.env.FUNIL_TEST_ENV}_deals`,
      CRM_PORT: "0",
      LOG_LEVEL: "warn",
    }),
    systemClock,
  );
  const sql = crm.sql;
  await sql.begin(async (tx) => {
    for (const t of ["notes", "tasks", "opportunities", "stages", "pipelines"])
      await tx.unsafe(`delete from ${t}`);
    await tx`delete from contacts where id like 'ctx_%'`;
    await tx`delete from members where id like 'usrx_%'`;
    await tx`
      insert into pipelines (id, workspace_id, name, created_at)
      select 'plx_' || w || '_' || p, case when w = 0 then ${WS} else 'ws_x' || w end, 'P', now()
      from generate_series(0, 50) w, generate_series(0, 3) p`;
    await tx`
      insert into stages (id, workspace_id, pipeline_id, name, position)
      select 'stgx_' || w || '_' || p || '_' || s, case when w = 0 then ${WS} else 'ws_x' || w end,
             'plx_' || w || '_' || p, 'S' || s, s
      from generate_series(0, 50) w, generate_series(0, 3) p, generate_series(0, 4) s`;
    await tx`
      insert into contacts (id, workspace_id, name, created_at, updated_at)
      select 'ctx_' || w || '_' || c, case when w = 0 then ${WS} else 'ws_x' || w end, 'C', now(), now()
      from generate_series(0, 50) w, generate_series(0, 199) c`;
    // GET /contacts' own: a tag and a search word 1 in 1 000, another tag every other contact, each one's e-mail and phone.
    await tx`
      insert into contacts (id, workspace_id, name, phone, phone_digits, email, email_lower, tags, status, search,
        created_at, updated_at)
      select 'ctx_q_' || i, ${WS}, 'Contact ' || i, '+55 11 9' || lpad(i::text, 8, '0'), '55119' || lpad(i::text, 8, '0'),
             'c' || i || '@x.test', 'c' || i || '@x.test',
             case when i % 1000 = 7 then array['vip'] when i % 2 = 0 then array['lead'] else '{}' end,
             case when i % 50 = 0 then 'archived' else 'active' end,
             'contact ' || i || case when i % 1000 = 3 then ' conceicao' else '' end || ' c' || i || '@x.test',
             ts, ts + (i % 7) * interval '1 hour'
      from (select i, timestamptz '2025-01-01' + i * interval '1 minute' as ts from generate_series(1, 60000) i) g`;
    await tx`
      insert into members (id, workspace_id, name, email, role, created_at, updated_at)
      select 'usrx_' || w || '_' || m, case when w = 0 then ${WS} else 'ws_x' || w end, 'M',
             'm' || w || '_' || m || '@x.test', 'atendente', now(), now()
      from generate_series(0, 50) w, generate_series(0, 19) m`;
    // Half the deals in one workspace, the rest spread over 50 others.
    await tx`
      insert into opportunities (id, workspace_id, title, pipeline_id, stage_id, contact_id, status, value_cents, currency,
        won_at, lost_at, stage_changed_at, created_at, updated_at, trashed_at)
      select 'oppx_' || lpad(i::text, 7, '0'), case when w = 0 then ${WS} else 'ws_x' || w end, 'Deal',
             'plx_' || w || '_' || (i % 4), 'stgx_' || w || '_' || (i % 4) || '_' || (i % 5), 'ctx_' || w || '_' || (i % 200),
             case when i % 10 = 0 then 'won' when i % 10 = 1 then 'lost' else 'open' end, i % 10000, 'BRL',
             case when i % 10 = 0 then ts + interval '3 days' end, case when i % 10 = 1 then ts + interval '2 days' end,
             ts + interval '1 day', ts, ts + (i % 7) * interval '1 hour', case when i % 50 = 0 then ts end
      from (select i, case when i <= 100000 then 0 else 1 + i % 50 end as w,
                   timestamptz '2025-01-01' + (1 + (i - 1) % 100000) * interval '1 minute' as ts
            from generate_series(1, 200000) i) g`;
    await tx`
      insert into tasks (id, workspace_id, title, assignee_user_id, completed_at, created_at, updated_at)
      select 'tskx_' || lpad(i::text, 7, '0'), case when w = 0 then ${WS} else 'ws_x' || w end, 'T',
             'usrx_' || w || '_' || (i % 20), case when i % 3 = 0 then ts end, ts, ts
      from (select i, case when i <= 50000 then 0 else 1 + i % 50 end as w,
                   timestamptz '2025-01-01' + (1 + (i - 1) % 50000) * interval '1 minute' as ts
            from generate_series(1, 100000) i) g`;
  });
  await sql`analyze`;
}, 120_000);

afterAll(async () => {
  await crm?.stop();
});

const planText = (rows: readonly object[]) => rows.map((r) => Object.values(r)[0] as string).join("\n");
/** A plan's nodes and the indexes they use, without the values in their conditions. */
const shape = (plan: string) =>
  plan.match(/(Limit|Sort|Seq Scan|(Bitmap )?Index (Only )?Scan( Backward)? using \w+|Bitmap Heap Scan)/g);

type Lists = {
  [K in "contacts" | "deals" | "tasks"]: ReturnType<
    ReturnType<
      { contacts: typeof contactStore; deals: typeof dealStore; tasks: typeof taskStore }[K]
    >["listQuery"]
  >;
};
/** A list's statement, not run, and the index it should walk. */
type ListCase = [string, Lists[keyof Lists], string];

/** GET /contacts with a search or a tag: planned for its value at every call, by the index its rarity calls for. */
function contactSearches(sql: Sql): ListCase[] {
  const contacts = contactStore(sql, noop, noop);
  const page = (f: Omit<Parameters<typeof contacts.listQuery>[1], "status">) =>
    contacts.listQuery(WS, { status: "active", ...f }, 51);
  return [
    ["GET /contacts?tag=vip (1 in 1 000)", page({ tag: "vip" }), "contacts_tags"],
    ["GET /contacts?tag=lead (1 in 2)", page({ tag: "lead" }), "contacts_by_created"],
    ["GET /contacts?q=conceicao (1 in 1 000)", page({ query: "Conceição" }), "contacts_search"],
    ["GET /contacts?q=contact (every contact)", page({ query: "contact" }), "contacts_by_created"],
  ];
}

/** GET /contacts' pages of the usual filters: a page of the usual size keeps one plan for each. */
function contactPages(sql: Sql): ListCase[] {
  const contacts = contactStore(sql, noop, noop);
  const at = (s: string) => new Date(s);
  const active = { status: "active" } as const;
  return [
    ["GET /contacts (first page)", contacts.listQuery(WS, active, 51), "contacts_by_created"],
    [
      "GET /contacts (a later page: cursor)",
      contacts.listQuery(WS, active, 51, [at("2025-01-21T00:00:00Z"), "ctx_q_28800"]),
      "contacts_by_created",
    ],
    [
      "GET /contacts?status=archived",
      contacts.listQuery(WS, { status: "archived" }, 51),
      "contacts_by_created",
    ],
    [
      "GET /contacts?createdAfter= (the last tenth)",
      contacts.listQuery(WS, { ...active, createdAfter: at("2025-02-07T00:00:00Z") }, 51),
      "contacts_by_created",
    ],
    [
      "GET /contacts?updatedAfter= (polling: the last tenth)",
      contacts.listQuery(WS, { ...active, updatedAfter: at("2025-02-07T00:00:00Z") }, 51),
      "contacts_by_updated",
    ],
    [
      "GET /contacts?email=",
      contacts.listQuery(WS, { ...active, email: "C4242@x.test" }, 51),
      "contacts_email_unique",
    ],
    [
      "GET /contacts?phone=",
      contacts.listQuery(WS, { ...active, phone: "+55 (11) 9 0000-4242" }, 51),
      "contacts_phone_unique",
    ],
  ];
}

/** The list queries of contacts, deals and tasks a page of the usual size keeps one plan for, each with its index. */
function listCases(sql: Sql) {
  const deals = dealStore(sql, pipelineStore(sql, noop), noop);
  const tasks = taskStore(sql, noop);
  const at = (s: string) => new Date(s);
  const cases: ListCase[] = [
    ...contactPages(sql),
    ["GET /opportunities (first page)", deals.listQuery(WS, {}, 51), "opportunities_by_created"],
    [
      "GET /opportunities (a later page: cursor)",
      deals.listQuery(WS, {}, 51, [at("2025-02-15T00:00:00Z"), "oppx_0065000"]),
      "opportunities_by_created",
    ],
    [
      "GET /opportunities?updatedAfter=",
      deals.listQuery(WS, { updatedAfter: at("2025-02-01T00:00:00Z") }, 51),
      "opportunities_by_updated",
    ],
    [
      "GET /opportunities?pipelineId=",
      deals.listQuery(WS, { pipelineId: "plx_0_1" }, 51),
      "opportunities_by_pipeline",
    ],
    [
      "GET /opportunities?stageId=",
      deals.listQuery(WS, { stageId: "stgx_0_1_2" }, 51),
      "opportunities_by_stage",
    ],
    [
      "GET /opportunities?contactId=",
      deals.listQuery(WS, { contactId: "ctx_0_7" }, 51),
      "opportunities_by_contact",
    ],
    ["GET /opportunities?status=won", deals.listQuery(WS, { status: "won" }, 51), "opportunities_by_status"],
    [
      "GET /opportunities?wonAfter=&wonBefore= (a narrow window)",
      deals.listQuery(
        WS,
        { wonAfter: at("2025-02-01T00:00:00Z"), wonBefore: at("2025-02-02T00:00:00Z") },
        51,
      ),
      "opportunities_by_won",
    ],
    [
      "GET /opportunities?lostAfter=&lostBefore= (a narrow window)",
      deals.listQuery(
        WS,
        { lostAfter: at("2025-02-01T00:00:00Z"), lostBefore: at("2025-02-02T00:00:00Z") },
        51,
      ),
      "opportunities_by_lost",
    ],
    [
      "GET /opportunities?stageChangedAfter= (recent changes)",
      deals.listQuery(WS, { stageChangedAfter: at("2025-03-10T00:00:00Z") }, 51),
      // The planner walks the keyset index and filters (its row estimate cannot see that recent
      // changes sit at the end of the creation order); by_stage_changed serves the filter alone.
      "opportunities_by_",
    ],
    ["GET /tasks", tasks.listQuery(WS, {}, 51), "tasks_by_created"],
    ["GET /tasks?open=true", tasks.listQuery(WS, { open: true }, 51), "tasks_by_done"],
    [
      "GET /tasks?assigneeUserId=",
      tasks.listQuery(WS, { assigneeUserId: "usrx_0_3" }, 51),
      "tasks_by_assignee",
    ],
    [
      "GET /tasks?assigneeUserId=&open=false",
      tasks.listQuery(WS, { assigneeUserId: "usrx_0_3", open: false }, 51),
      "tasks_by_assignee_done",
    ],
  ];
  return cases;
}

describe("list queries use their indexes (EXPLAIN)", () => {
  it("docs/api/conventions.md §Lists and pagination: every list and funnel query of contacts, deals and tasks is an index scan, never a sequential scan", async () => {
    const sql = crm.sql;
    const funnel = funnelStore(sql);
    const at = (s: string) => new Date(s);
    const cases = [...listCases(sql), ...contactSearches(sql)];
    const report: string[] = [];
    for (const [name, query, index] of cases) {
      const plan = planText(await sql`explain (analyze, costs off, timing on, summary on) ${query}`);
      report.push(`### ${name}\n\nexpected index: \`${index}\`\n\n\`\`\`\n${plan}\n\`\`\`\n`);
      expect(plan, name).toContain(index);
      expect(plan, name).not.toMatch(/Seq Scan/);
    }
    // The funnel: two aggregate queries, driven by the pipeline index.
    const range = { from: at("2025-01-20T00:00:00Z"), to: at("2025-02-20T00:00:00Z") };
    const t0 = performance.now();
    const figures = await funnel.rows(WS, "plx_0_1", range);
    const ms = performance.now() - t0;
    expect(figures.stages).toHaveLength(5);
    report.push(
      `### GET /funnel?pipelineId=&from=&to= (one month, 25 000 deals in the pipeline)\n\n` +
        `both aggregate queries together: ${ms.toFixed(1)} ms; total created in range: ` +
        `${figures.byStatus.open.count + figures.byStatus.won.count + figures.byStatus.lost.count}\n`,
    );
    if (process.env.EXPLAIN_OUT) {
      writeFileSync(
        process.env.EXPLAIN_OUT,
        "# EXPLAIN of the list queries\n\n" +
          "Generated by `EXPLAIN_OUT=bench/EXPLAIN.md npx vitest run services/crm/src/store/explain.test.ts`: " +
          "the store's own list queries (services/crm/src/store/contacts.ts, deals.ts, tasks.ts), EXPLAIN ANALYZE " +
          "on PostgreSQL with 70 200 contacts (60 000 in the workspace queried, 1 in 50 archived), 200 000 deals " +
          "(100 000 in the workspace queried, 1 in 50 trashed) and 100 000 tasks over 51 workspaces. Every list is " +
          "an index scan in the order of its keyset (no sort, no sequential scan); the test fails if one is not. " +
          "A contact's e-mail or phone reads its one row by the unique index; a search or a tag is planned for its " +
          "value at every call: a rare one reads its rows by the trigram or tag index and sorts only those, a " +
          "common one walks the keyset index. One known planner choice: " +
          "with stageChangedAfter the planner walks the keyset index and filters rather than use " +
          "opportunities_by_stage_changed and sort, because its estimate cannot see that recent stage " +
          "changes sit at the end of the creation order; on 100 000 deals that page costs ~20 ms.\n\n" +
          report.join("\n"),
      );
    }
  }, 60_000);

  it("a page of the usual size keeps one plan (PostgreSQL's generic plan), and it uses the same index", async () => {
    const [current] = await crm.sql<{ db: string }[]>`select current_database() as db`;
    const url = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    url.pathname = `/${current!.db}`;
    // One connection that always uses the generic plan, so that EXPLAIN EXECUTE shows the plan kept.
    let parameters: unknown[] = [];
    const probe = postgres(url.href, {
      max: 1,
      onnotice: () => {},
      connection: { plan_cache_mode: "force_generic_plan" },
      debug: (_connection, _query, params) => {
        parameters = params;
      },
    });
    try {
      const described = listCases(probe);
      const executed = listCases(probe);
      const forValues = listCases(crm.sql);
      for (const [i, [name, query, index]] of described.entries()) {
        const { string } = await query.describe();
        // The usual page size is written into the statement, not a parameter (pageLimit).
        expect(string, name).toMatch(/ limit 51$/);
        await executed[i]![1];
        const values = parameters; // the statement's, before the next one's replace them
        await probe.unsafe(`prepare kept_${i} as ${string}`);
        // The test's own values, as literals (EXPLAIN EXECUTE cannot type a parameter of its own).
        const args = values.map((v) => `'${String(v).replaceAll("'", "''")}'`).join(", ");
        const kept = planText(await probe.unsafe(`explain (costs off) execute kept_${i}(${args})`));
        const made = planText(await crm.sql`explain (costs off) ${forValues[i]![1]}`);
        expect(kept, name).toContain(index);
        // The same plan as the one made for these very values: the same nodes on the same indexes.
        expect(shape(kept), name).toEqual(shape(made));
      }
    } finally {
      await probe.end({ timeout: 5 });
    }
  }, 60_000);
});
