import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql } from "@funil/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planOf } from "../../../../tests/plans.js";
import { migrations } from "../server.js";
import { type InteractionFilters, listQuery } from "./interactions.js";

/**
 * GET /interactions' plans (docs/api/conventions.md §Lists and pagination: the cost of a page does not grow with
 * its depth): the store's own list statement, EXPLAIN ANALYZEd on 160 000 interactions over 1 001 workspaces
 * (80 000 in the one queried, with 4 000 contacts and 40 users, and 80 in each other; channels from WhatsApp, most,
 * to facebook and phone, one in a thousand each). Each filter walks the index of its filter in (createdAt desc,
 * id desc) order, with no sequential scan and no sort of the workspace's rows. A page of a usual size is a
 * statement whose plan PostgreSQL keeps (pageLimit), and the kept plan walks as the one made for the values does.
 * Several channels over the whole workspace are planned for their values at every call (with a contact or a user they
 * filter that one's index, kept like the others): with the page size a parameter PostgreSQL still
 * keeps a generic plan after five calls (its estimate, made for a workspace of the average size, is no worse than
 * the plans made for the values), and that plan walks the whole workspace for a rare set, where the plan made for
 * its values reads the set's rows by interactions_by_channel and sorts only those. A rare actor (api, one in a
 * thousand) reads its rows by interactions_by_actor.
 * `EXPLAIN_OUT=bench/EXPLAIN-timeline.md` writes the plans down.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV ?? "test"}_explain`);
const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const databaseUrl = `${serverUrl.replace(/\/[^/]*$/, "")}/${names.database("timeline")}`;
const WS = "ws_explain";
/** The default page (limit 100) and its extra row. */
const TAKE = 101;
/** The generated interactions of a workspace are 5 minutes apart from 2026-01-01 (i counts from 1). */
const createdOf = (i: number) => new Date(Date.UTC(2026, 0, 1) + (i - 1) * 5 * 60_000);
const msg = (i: number) => `msg:${String(i).padStart(7, "0")}`;
let sql: Sql;

beforeAll(async () => {
  sql = await openDatabase(serverUrl, names.database("timeline"), { max: 1 });
  await migrate(sql, migrations);
  await sql.begin(async (tx) => {
    await tx`truncate interactions, conversations`;
    // Half the interactions in one workspace, the rest spread over 1 000 others of 80 each. Every other one inbound (the
    // contact's); of the outbound, 3 in 5 a user's, 1 in 5 automation's, the rest the IA's but one in a thousand
    // through the API.
    await tx`
      insert into interactions (workspace_id, id, kind, channel, direction, actor, user_id, contact_id,
        conversation_id, created_at, preview)
      select case when w = 0 then ${WS} else 'ws_x' || w end, 'msg:' || lpad(i::text, 7, '0'), 'message',
             case when i % 1000 = 7 then 'facebook' when i % 1000 = 507 then 'phone' when i % 100 = 3 then 'call'
                  when i % 20 = 1 then 'email' when i % 10 = 2 then 'note' when i % 4 = 0 then 'instagram'
                  else 'whatsapp' end,
             case when i % 2 = 0 then 'inbound' else 'outbound' end,
             case when i % 2 = 0 then 'contact' when i % 10 in (1, 3, 5) then 'user' when i % 10 = 7 then 'automation'
                  when i % 1000 = 9 then 'api' else 'ia' end,
             case when i % 10 in (1, 3, 5) then 'usrx_' || (i / 10 % 40) end,
             'ctx_' || (i % 4000), 'cvx_' || (i % 4000), ts, 'preview ' || i
      from (select i, case when i <= 80000 then 0 else 1 + i % 1000 end as w,
                   timestamptz '2026-01-01' + ((i - 1) % 80000) * interval '5 minutes' as ts
            from generate_series(1, 160000) i) g`;
    await tx`
      insert into conversations (workspace_id, id, assignee_user_id, assigned_at)
      select distinct workspace_id, conversation_id, 'usrx_' || (length(conversation_id) % 40), timestamptz '2026-01-01'
      from interactions`;
  });
  await sql`analyze`;
}, 180_000);

afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

type Case = {
  name: string;
  filters: InteractionFilters;
  after?: [Date, string];
  /** The indexes that serve the page: either of two when the plan for the values may pick one or the other. */
  indexes: string[];
  /** The most rows the page may read: a page's worth unless said (a filter that keeps 1 row in n walks ~100 n). */
  reads?: number;
};

const byCreated = "interactions_by_created";
const byContact = "interactions_by_contact";
const byUser = "interactions_by_user";
const byChannel = "interactions_by_channel";
const byActor = "interactions_by_actor";
const cursor: [Date, string] = [createdOf(40001), msg(40001)];
const day = {
  createdAfter: new Date("2026-05-01T00:00:00Z"),
  createdBefore: new Date("2026-05-02T00:00:00Z"),
};
const cases: Case[] = [
  { name: "GET /interactions (first page)", filters: {}, indexes: [byCreated] },
  { name: "GET /interactions (a later page: cursor)", filters: {}, after: cursor, indexes: [byCreated] },
  { name: "GET /interactions?contactId=", filters: { contactId: "ctx_7" }, indexes: [byContact] },
  {
    name: "GET /interactions?contactId= (a later page: cursor)",
    filters: { contactId: "ctx_7" },
    after: [createdOf(40007), msg(40007)],
    indexes: [byContact],
  },
  { name: "GET /interactions?userId=", filters: { userId: "usrx_8" }, indexes: [byUser] },
  {
    name: "GET /interactions?userId= (a later page: cursor)",
    filters: { userId: "usrx_8" },
    after: cursor,
    indexes: [byUser],
  },
  {
    name: "GET /interactions?channel=whatsapp (common)",
    filters: { channels: ["whatsapp"] },
    indexes: [byChannel],
  },
  {
    name: "GET /interactions?channel=facebook (1 in 1000)",
    filters: { channels: ["facebook"] },
    indexes: [byChannel],
  },
  {
    name: "GET /interactions?channel=call (a later page: cursor)",
    filters: { channels: ["call"] },
    after: cursor,
    indexes: [byChannel],
  },
  {
    name: "GET /interactions?channel=whatsapp,instagram (a common set)",
    filters: { channels: ["whatsapp", "instagram"] },
    indexes: [byCreated],
  },
  {
    name: "GET /interactions?channel=facebook,phone (a rare set: 2 in 1000)",
    filters: { channels: ["facebook", "phone"] },
    indexes: [byChannel],
  },
  {
    name: "GET /interactions?channel=call,facebook (1 in 100)",
    filters: { channels: ["call", "facebook"] },
    indexes: [byCreated, byChannel],
    // Walking the workspace's order and keeping 1 row in 90 for a page, the planner's choice over reading the
    // set's 880 rows and sorting them: bounded by the page, not by the workspace.
    reads: 12_000,
  },
  {
    name: "GET /interactions?contactId=&channel=",
    filters: { contactId: "ctx_5", channels: ["whatsapp"] },
    indexes: [byContact],
  },
  {
    name: "GET /interactions?contactId=&channel=whatsapp,call",
    filters: { contactId: "ctx_5", channels: ["whatsapp", "call"] },
    indexes: [byContact],
  },
  {
    name: "GET /interactions?userId=&channel=call",
    filters: { userId: "usrx_10", channels: ["call"] },
    indexes: [byUser, byChannel],
  },
  {
    name: "GET /interactions?userId=&channel=whatsapp,call",
    filters: { userId: "usrx_8", channels: ["whatsapp", "call"] },
    indexes: [byUser],
  },
  {
    name: "GET /interactions?direction=outbound&actor=user (speed-to-lead)",
    filters: { direction: "outbound", actor: "user" },
    indexes: [byActor, byCreated],
  },
  { name: "GET /interactions?actor=ia (1 in 10)", filters: { actor: "ia" }, indexes: [byActor, byCreated] },
  { name: "GET /interactions?actor=api (1 in 1000)", filters: { actor: "api" }, indexes: [byActor] },
  {
    name: "GET /interactions?actor=api (a later page: cursor)",
    filters: { actor: "api" },
    after: cursor,
    indexes: [byActor],
  },
  { name: "GET /interactions?createdAfter=&createdBefore= (one day)", filters: day, indexes: [byCreated] },
  {
    name: "GET /interactions?contactId=&createdAfter=",
    filters: { contactId: "ctx_7", createdAfter: day.createdAfter },
    indexes: [byContact],
  },
];

const statement = (probe: Sql, c: Case) => listQuery(probe, WS, c.filters, TAKE, c.after);
/** Kept for a usual page size: every filter but several channels over the whole workspace (interactions.ts). */
const planned = (c: Case) =>
  (c.filters.channels?.length ?? 0) < 2 ||
  c.filters.contactId !== undefined ||
  c.filters.userId !== undefined;
const planText = (rows: readonly object[]) => rows.map((r) => Object.values(r)[0] as string).join("\n");
/** The indexes of interactions a plan scans (each row's conversation is a primary-key probe). */
const indexesOf = (plan: string) =>
  [
    ...plan.matchAll(
      /(?:Index (?:Only )?Scan (?:Backward )?using |Bitmap Index Scan on )(interactions_\w+)/g,
    ),
  ].map((m) => m[1]);
/** A plan's nodes, without the indexes they use or the values in their conditions. */
const shape = (plan: string) =>
  plan.match(/(Limit|Sort|Seq Scan|(Bitmap )?Index (Only )?Scan( Backward)?|Bitmap Heap Scan)/g);
/** The most rows any node of an EXPLAIN ANALYZE returned, or read and dropped. */
const rowsTouched = (plan: string) =>
  Math.max(
    ...[...plan.matchAll(/rows=(\d+)|Rows Removed by \w+( \w+)?: (\d+)/g)].map((m) => Number(m[1] ?? m[3])),
  );
const explainAnalyze = async (probe: Sql, query: unknown) =>
  planText(await probe`explain (analyze, costs off, timing on, summary on) ${query as never}`);

/**
 * The page walks one of its indexes, with no sequential scan; a sort only of a rare channel set's rows, read by
 * interactions_by_channel.
 */
function expectServed(c: Case, plan: string) {
  const used = indexesOf(plan);
  expect(used.length, `${c.name}\n${plan}`).toBe(1);
  expect(c.indexes, `${c.name}\n${plan}`).toContain(used[0]);
  expect(plan, c.name).not.toMatch(/Seq Scan/);
  if (planned(c) || used[0] !== byChannel) expect(plan, `${c.name}\n${plan}`).not.toMatch(/Sort/);
}

/** A value as an SQL literal, for EXECUTE's arguments. */
const literal = (v: unknown) =>
  `'${(v instanceof Date ? v.toISOString() : Array.isArray(v) ? `{${v.join(",")}}` : String(v)).replace(/'/g, "''")}'`;

describe("GET /interactions plans (EXPLAIN)", () => {
  it("docs/api/conventions.md §Lists and pagination: every filter of GET /interactions walks its index in (createdAt desc, id desc) order, never a sequential scan or a sort of the workspace, in the plan made for its values and in the plan PostgreSQL keeps for a page of 100", async () => {
    const report: string[] = [];
    for (const c of cases) {
      const plan = await explainAnalyze(sql, statement(sql, c));
      expectServed(c, plan);
      expect(rowsTouched(plan), `${c.name}\n${plan}`).toBeLessThan(c.reads ?? 3000);
      let entry = `### ${c.name}\n\nindex: \`${c.indexes.join("` or `")}\`\n\n\`\`\`\n${plan}\n\`\`\`\n`;
      const run = (probe: Sql) => statement(probe, c);
      if (planned(c)) {
        const kept = await planOf(databaseUrl, /from interactions i/, run, true);
        expect(kept.query, c.name).toMatch(/limit 101$/);
        expectServed(c, kept.plan);
        expect(shape(kept.plan), `${c.name}\n${kept.plan}`).toEqual(shape(plan));
        entry += `\nthe plan PostgreSQL keeps for the statement (generic):\n\n\`\`\`\n${kept.plan}\n\`\`\`\n`;
      } else {
        const sent = await planOf(databaseUrl, /from interactions i/, run, false);
        expect(sent.query, c.name).toMatch(/limit \$\d+$/);
        entry += "\nsent unnamed: planned for its values at every call\n";
      }
      report.push(entry);
    }
    report.push(await channelsWithParameterLimit());
    const [server] = await sql<{ version: string }[]>`select split_part(version(), ' on ', 1) as version`;
    if (process.env.EXPLAIN_OUT)
      writeFileSync(
        process.env.EXPLAIN_OUT,
        "# EXPLAIN of GET /interactions\n\n" +
          "Generated by `EXPLAIN_OUT=bench/EXPLAIN-timeline.md npx vitest run services/timeline/src/store/explain.test.ts`: " +
          "the store's own list statement (services/timeline/src/store/interactions.ts, `listQuery`) for a page of 100 " +
          "(101 rows asked), EXPLAIN ANALYZE on PostgreSQL with 160 000 interactions over 1 001 workspaces (80 000 in the " +
          "workspace queried, with 4 000 contacts and 40 users, and 80 in each other; WhatsApp most, facebook and phone one in a thousand " +
          "each), and for a page of a usual size the plan PostgreSQL keeps for the statement (its generic plan). Every " +
          "page walks the index of its filter in (created_at desc, id desc) order, with no sort and no sequential scan, " +
          "in the same index in both plans; the test fails if one does not. One channel reads interactions_by_channel. " +
          "Several channels over the whole workspace are the exception (with a contact or a user they filter that one's " +
          "index, kept like the others): no index gives their rows in order, a rare set is best read by " +
          "interactions_by_channel and sorted (only its own rows), a common one by walking interactions_by_created, and " +
          "the generic plan walks interactions_by_created for every set (last section), so that statement is sent " +
          "unnamed and planned for its values at every call. One actor reads interactions_by_actor.\n\n" +
          `Run ${new Date().toISOString().slice(0, 10)}: ${server!.version}, Node ${process.version}, ` +
          `${cpus().length} × ${cpus()[0]?.model.trim()}.\n\n` +
          report.join("\n"),
      );
  }, 180_000);

  /**
   * What sending several channels unnamed avoids: the statement with its page size a parameter, prepared as
   * postgres.js prepares a named one, after six calls with a common set.
   */
  async function channelsWithParameterLimit() {
    let sent: { query: string; params: unknown[] } | undefined;
    const probe = postgres(databaseUrl, {
      max: 1,
      onnotice: () => {},
      debug: (_c, query, params) => {
        if (/from interactions i/.test(query)) sent = { query, params };
      },
    });
    try {
      await listQuery(probe as unknown as Sql, WS, { channels: ["whatsapp", "instagram"] }, TAKE);
      const { query, params } = sent!;
      // The channel list: the driver has written it as an array literal by the time the call returns.
      const list = params.findIndex((p) => String(p).includes("instagram"));
      expect(list).toBeGreaterThan(0);
      const args = (channels: string[]) =>
        `(${params.map((p, n) => literal(n === list ? channels : p)).join(", ")})`;
      await probe.unsafe(`prepare chans as ${query}`);
      for (let i = 0; i < 6; i++) await probe.unsafe(`execute chans${args(["whatsapp", "instagram"])}`);
      const [state] = await probe<{ genericPlans: number }[]>`
        select generic_plans::int as "genericPlans" from pg_prepared_statements where name = 'chans'`;
      expect(state!.genericPlans).toBeGreaterThanOrEqual(1);
      const analyze = async (channels: string[]) =>
        planText(
          await probe.unsafe(
            `explain (analyze, costs off, timing on, summary on) execute chans${args(channels)}`,
          ),
        );
      const common = await analyze(["whatsapp", "instagram"]);
      const rare = await analyze(["facebook", "phone"]);
      await probe.unsafe("set plan_cache_mode = force_custom_plan");
      const rareCustom = await analyze(["facebook", "phone"]);
      // The kept plan: the values are parameters in its conditions. For a rare set it walks the workspace.
      expect(rare, rare).toMatch(/channel = ANY \(\$\d+\)/);
      expect(indexesOf(rare), rare).toEqual([byCreated]);
      expect(rowsTouched(rare), rare).toBeGreaterThan(50_000);
      expect(indexesOf(rareCustom), rareCustom).toEqual([byChannel]);
      expect(rowsTouched(rareCustom), rareCustom).toBeLessThan(3000);
      return (
        "### Several channels with the page size a parameter, prepared (what sending them unnamed avoids)\n\n" +
        `After six calls with whatsapp,instagram PostgreSQL runs the statement with its generic plan ` +
        `(pg_prepared_statements: generic_plans ${state!.genericPlans}), the same for every set:\n\n` +
        `whatsapp,instagram (a common set), the generic plan:\n\n\`\`\`\n${common}\n\`\`\`\n\n` +
        `facebook,phone (a rare set), the generic plan:\n\n\`\`\`\n${rare}\n\`\`\`\n\n` +
        `facebook,phone, the plan made for its values (what the store's unnamed statement gets):\n\n` +
        `\`\`\`\n${rareCustom}\n\`\`\`\n`
      );
    } finally {
      await probe.end({ timeout: 5 });
    }
  }

  it("a page of 100 is a statement whose plan PostgreSQL keeps after five calls; several channels are planned at every call", async () => {
    const probe = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      // PostgreSQL keeps the generic plan when its estimate is no worse than the plans made for the values: for
      // a channel as common in its workspace as channels are on average; for whatsapp, which fills most of one,
      // or a rare channel the plan for the values looks cheaper and is made at each call (it walks the same index).
      const page = (workspaceId: string, f: InteractionFilters) =>
        listQuery(probe as unknown as Sql, workspaceId, f, TAKE);
      for (let i = 0; i < 8; i++) {
        expect(await page(WS, { contactId: "ctx_5" })).toHaveLength(20);
        expect(await page(WS, { channels: ["instagram"] })).toHaveLength(TAKE);
        expect(await page(WS, { channels: ["facebook", "phone"] })).toHaveLength(TAKE);
      }
      const statements = await probe<{ statement: string; genericPlans: number }[]>`
        select statement, generic_plans::int as "genericPlans" from pg_prepared_statements
        where statement like '%from interactions i%'`;
      const kept = (part: string) => statements.find((s) => s.statement.includes(part));
      expect(kept("i.contact_id = $")?.genericPlans).toBeGreaterThanOrEqual(3);
      expect(kept("i.channel = $")?.genericPlans).toBeGreaterThanOrEqual(3);
      expect(kept("i.channel = any")).toBeUndefined();
    } finally {
      await probe.end({ timeout: 5 });
    }
  });
});
