import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql } from "@funil/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planOf } from "../../../../tests/plans.js";
import { type LearnerFilters, learnerStore } from "./learners.js";

/**
 * GET /platform/users' plans (docs/api/conventions.md §Lists and pagination: the cost of a page does not
 * grow with its depth): the store's own statements, EXPLAIN ANALYZEd on 110 000 users, 100 000 of them
 * learners, shaped as bench/learning.mjs loads them (names "Aluno N Silva", one in seven "Aluno N
 * Conceição"; the last activity spread over 120 days, one learner in twenty never logged in; enrollments,
 * certificates, sessions, lesson progress and library reads per learner). The data is global: no
 * workspace. A page without a filter walks users_learners in (created_at, id) order from its cursor; its
 * statement, for a page of a usual size, is one whose plan PostgreSQL keeps (pageLimit), and the kept plan
 * walks the same way. A search and an activity bound are planned for their values (an activity bound at
 * every call, sent unnamed; a search with its page size a parameter): a rare term reads its few matches by the trigram index and a narrow activity window by
 * users_active, each sorting only those; a common term or a wide window walks users_learners and filters.
 * Their generic plan, the one PostgreSQL keeps after five calls when it judges it no worse than the plans
 * made for the values, walks users_learners for every value and so reads every learner for a rare term or
 * a narrow window. Whether PostgreSQL keeps it turns on the estimates: on this table a named search was
 * still planned for its values at the sixth call (the generic estimate stays above the custom plans'; on
 * 20 000 learners, after five assorted terms, it was kept), while a named activeSince with the page size
 * written in kept the generic plan after five calls for the last 30 days and then read every learner for
 * the last 2 hours; the last test writes that down without holding it. An activity bound is not left to
 * the estimates: it is sent unnamed. A search is (planning its whole statement at every call costs a rare
 * term's page more than its plan saves on this table), its page size a parameter. GET /platform/users/{id} reads each of its lists by the learner's index.
 * `EXPLAIN_OUT=bench/EXPLAIN-learning.md` writes the plans down.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV ?? "test"}_explain`);
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const databaseUrl = Object.assign(new URL(server), { pathname: `/${names.database("learning")}` }).href;
let sql: Sql;

/** The default page (limit 50) and its extra row. */
const TAKE = 51;
const LEARNERS = 100_000;
/** Users: one in eleven never enrolls. */
const USERS = 110_000;
/** User i was created i minutes after 2025-10-22 (the generated data below). */
const createdOf = (i: number) => new Date(Date.UTC(2025, 9, 22) + i * 60_000);
const idOf = (i: number) => `u${String(i).padStart(7, "0")}`;
const NOW = Date.UTC(2026, 10, 26);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

beforeAll(async () => {
  sql = await openDatabase(server, names.database("learning"), { max: 1 });
  await migrate(sql, fileURLToPath(new URL("../../migrations", import.meta.url)));
  await sql.begin(async (tx) => {
    await tx`truncate users, courses, lessons, enrollments, sessions, lesson_progress, certificates, library_docs,
      library_reads`;
    // One user in eleven never enrolls (not a learner); the last activity is spread over the 120 days
    // before NOW, independent of the creation order.
    await tx`
      insert into users (id, name, email, created_at, search, last_login_at, last_active_at, learner)
      select 'u' || lpad(i::text, 7, '0'), name, email, timestamptz '2025-10-22' + i * interval '1 minute',
             lower(replace(name, 'ção', 'cao')) || ' ' || email,
             case when i % 20 <> 0 then active - (i % 5) * interval '1 hour' end,
             case when i % 20 <> 0 then active end,
             i % 11 <> 10
      from (select i, 'Aluno ' || i || case when i % 7 = 0 then ' Conceição' else ' Silva' end as name,
                   'aluno' || i || '@plat.example' as email,
                   ${new Date(NOW)}::timestamptz - (1 + (i * 7919) % 2880) * interval '1 hour' as active
            from generate_series(0, ${USERS - 1}) i) g`;
    await tx`insert into courses (id, title) select 'c' || c, 'Curso ' || c from generate_series(0, 1999) c`;
    await tx`
      insert into lessons (id, course_id, title)
      select 'c' || c || '-l' || l, 'c' || c, 'Aula ' || l from generate_series(0, 1999) c, generate_series(0, 9) l`;
    await tx`insert into library_docs (id, title) select 'd' || d, 'Documento ' || d from generate_series(0, 199) d`;
    // One to five courses per learner, three in ten completed with a certificate.
    await tx`
      insert into enrollments (user_id, course_id, status, progress_pct, started_at, completed_at)
      select distinct on (id, course) id, course, 'active', case when done then 100 else n % 100 end,
             created_at + interval '1 day', case when done then created_at + interval '30 days' end
      from (select u.id, u.created_at, u.n, 'c' || ((u.n * 31 + k * 97) % 2000) as course, (u.n * 13 + k) % 10 < 3 as done
            from (select id, created_at, substr(id, 2)::int as n from users where learner) u, generate_series(1, 5) k
            where k <= 1 + u.n % 5) e`;
    await tx`
      insert into certificates (code, user_id, course_id, course_title, issued_at)
      select user_id || '-' || course_id, user_id, course_id, null, completed_at
      from enrollments where completed_at is not null`;
    await tx`
      insert into sessions (user_id, session_key, at, ip)
      select id, id || '-s' || s, last_active_at - s * interval '2 days', '10.0.' || s || '.' || (substr(id, 2)::int % 256)
      from users, generate_series(0, 2) s where last_active_at is not null`;
    await tx`
      insert into lesson_progress (user_id, lesson_id, course_id, watch_sec, watch_pct, completed, at)
      select e.user_id, e.course_id || '-l' || l, e.course_id, l * 60, l * 10, false, u.last_active_at - l * interval '3 days'
      from enrollments e join users u on u.id = e.user_id, generate_series(0, 4) l
      where u.last_active_at is not null`;
    await tx`
      insert into library_reads (user_id, doc_id, read_sec, read, at)
      select id, 'd' || (substr(id, 2)::int % 200), 120, true, last_active_at - interval '1 day'
      from users where last_active_at is not null`;
  });
  await sql`analyze`;
}, 180_000);

afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

type Case = {
  name: string;
  filters: LearnerFilters;
  after?: [Date, string];
  /** The index on users that serves the page. */
  index: "users_learners" | "users_active" | "users_search";
  /** A rare term or a narrow window: the generic plan reads nearly every learner for it. */
  rare?: true;
};

const cursor: [Date, string] = [createdOf(60_000), idOf(60_000)];
const at = (ms: number) => new Date(ms);
const cases: Case[] = [
  { name: "GET /platform/users (first page)", filters: {}, index: "users_learners" },
  { name: "GET /platform/users (a later page: cursor)", filters: {}, after: cursor, index: "users_learners" },
  {
    name: "GET /platform/users?activeSince= (the last 30 days: a quarter of the learners)",
    filters: { activeSince: at(NOW - 30 * DAY) },
    index: "users_learners",
  },
  {
    name: "GET /platform/users?activeSince= (the last 30 days, a later page: cursor)",
    filters: { activeSince: at(NOW - 30 * DAY) },
    after: cursor,
    index: "users_learners",
  },
  {
    name: "GET /platform/users?activeSince= (the last 2 hours: 1 learner in 1 440)",
    filters: { activeSince: at(NOW - 2 * HOUR) },
    index: "users_active",
    rare: true,
  },
  {
    name: "GET /platform/users?activeBefore= (60 days ago: half the learners)",
    filters: { activeBefore: at(NOW - 60 * DAY) },
    index: "users_learners",
  },
  {
    name: "GET /platform/users?activeBefore= (the first 2 hours of the 120 days: 1 learner in 1 440)",
    filters: { activeBefore: at(NOW - 2878 * HOUR) },
    index: "users_active",
    rare: true,
  },
  {
    name: "GET /platform/users?activeSince=&activeBefore= (one hour: 1 learner in 2 880)",
    filters: { activeSince: at(NOW - 50 * DAY), activeBefore: at(NOW - 50 * DAY + HOUR) },
    index: "users_active",
    rare: true,
  },
  {
    name: "GET /platform/users?q=aluno12345 (a rare term: 1 learner)",
    filters: { q: "aluno12345" },
    index: "users_search",
    rare: true,
  },
  {
    name: "GET /platform/users?q=aluno1234 (11 learners)",
    filters: { q: "aluno1234" },
    index: "users_search",
    rare: true,
  },
  {
    name: "GET /platform/users?q=conceicao (a common term: 1 learner in 7)",
    filters: { q: "conceicao" },
    index: "users_learners",
  },
  {
    name: "GET /platform/users?q=conceicao (a later page: cursor)",
    filters: { q: "conceicao" },
    after: cursor,
    index: "users_learners",
  },
];

const statement = (s: Sql, c: Case) => learnerStore(s).listQuery(c.filters, TAKE, c.after);
/** Kept for a usual page size: the list without a filter (learners.ts). */
const planned = (c: Case) => !c.filters.q && !c.filters.activeSince && !c.filters.activeBefore;
const planText = (rows: readonly object[]) => rows.map((r) => Object.values(r)[0] as string).join("\n");
/** The indexes a plan scans on users. */
const usersIndexes = (plan: string) =>
  [...plan.matchAll(/(?:Index (?:Only )?Scan(?: Backward)? using|Bitmap Index Scan on) (users_\w+)/g)].map(
    (m) => m[1],
  );
/** A plan's nodes on users, without the values in their conditions. */
const shape = (plan: string) =>
  plan.match(
    /(Limit|Sort|Seq Scan on \w+|(Bitmap )?Index (Only )?Scan( Backward)?( using| on) users_\w+|Bitmap Heap Scan)/g,
  );
/** The most rows a node on users returned, or read and dropped. */
const usersRowsTouched = (plan: string) =>
  Math.max(
    ...plan
      .split("\n")
      .filter((l) => !/SubPlan|enrollments|certificates/.test(l))
      .flatMap((l) => [...l.matchAll(/rows=(\d+)|Rows Removed by \w+( \w+)?: (\d+)/g)])
      .map((m) => Number(m[1] ?? m[3])),
  );
const executionMs = (plan: string) => Number(/Execution Time: ([\d.]+) ms/.exec(plan)?.[1]);

/** The page walks its index on users, with no sequential scan and no sort of every learner. */
function expectServed(c: Case, plan: string) {
  expect(usersIndexes(plan), `${c.name}\n${plan}`).toEqual([c.index]);
  expect(plan, `${c.name}\n${plan}`).not.toMatch(/Seq Scan/);
  // Walking users_learners is the keyset order: nothing to sort. The trigram index and users_active
  // hand over their few rows unordered; only those are sorted.
  if (c.index === "users_learners") expect(plan, `${c.name}\n${plan}`).not.toMatch(/Sort/);
}

/** A literal for EXECUTE's arguments (the driver sends every value as text). */
const literal = (v: unknown) => `'${String(v).replace(/'/g, "''")}'`;

/**
 * The statement `run` sends, as a named statement would be sent: with the page size written in (`limit 51`,
 * as pageLimit keeps a page) unless `asSent`, when the limit stays the parameter it is.
 */
async function sentStatement(run: (s: Sql) => Promise<unknown>, asSent = false) {
  let sent: { query: string; params: unknown[] } | undefined;
  const probe = postgres(databaseUrl, {
    max: 1,
    onnotice: () => {},
    debug: (_c, query, params) => {
      if (/from users u/.test(query)) sent = { query, params };
    },
  });
  try {
    await run(probe as unknown as Sql);
  } finally {
    await probe.end({ timeout: 5 });
  }
  if (!sent) throw new Error("no list statement was sent");
  const { query, params } = sent;
  if (asSent) return { query, params };
  // The limit is the statement's last parameter.
  return { query: query.replace(/limit \$\d+/, `limit ${TAKE}`), params: params.slice(0, -1) };
}

/** Runs `work` on a connection of its own, which it may change. */
async function onProbe<T>(work: (probe: postgres.Sql) => Promise<T>) {
  const probe = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    return await work(probe);
  } finally {
    await probe.end({ timeout: 5 });
  }
}
const argsOf = (params: unknown[]) => (params.length ? `(${params.map(literal).join(", ")})` : "");

/** The generic plan of a statement, EXPLAIN ANALYZEd for its own values. */
const genericAnalyzed = ({ query, params }: { query: string; params: unknown[] }) =>
  onProbe(async (probe) => {
    await probe.unsafe("set plan_cache_mode = force_generic_plan");
    await probe.unsafe(`prepare kept as ${query}`);
    return planText(
      await probe.unsafe(`explain (analyze, costs off, timing on, summary on) execute kept${argsOf(params)}`),
    );
  });

const report: string[] = [];
const afterFive: string[] = [];

describe("GET /platform/users plans (EXPLAIN)", () => {
  it("docs/api/conventions.md §Lists and pagination: every filter of GET /platform/users walks its index, users_learners in (created_at, id) order or a search's or a narrow window's own index sorting only its rows, never a sequential scan or a sort of every learner; the plan PostgreSQL keeps for a page of 50 without a filter walks the same way", async () => {
    for (const c of cases) {
      const plan = planText(
        await sql`explain (analyze, costs off, timing on, summary on) ${statement(sql, c)}`,
      );
      expectServed(c, plan);
      expect(usersRowsTouched(plan), `${c.name}\n${plan}`).toBeLessThan(3000);
      let entry = `### ${c.name}\n\nindex: \`${c.index}\`\n\n\`\`\`\n${plan}\n\`\`\`\n`;
      const run = (probe: Sql) => statement(probe, c);
      if (planned(c)) {
        const kept = await planOf(databaseUrl, /from users u/, run, true);
        expect(kept.query, c.name).toMatch(/limit 51\s/);
        expectServed(c, kept.plan);
        expect(shape(kept.plan), `${c.name}\n${kept.plan}`).toEqual(shape(plan));
        entry += `\nthe plan PostgreSQL keeps for the statement (generic):\n\n\`\`\`\n${kept.plan}\n\`\`\`\n`;
      } else {
        const sent = await planOf(databaseUrl, /from users u/, run, false);
        expect(sent.query, c.name).toMatch(/limit \$\d+\s/);
        entry += "\nsent unnamed: planned for its values at every call.";
        if (c.rare) {
          const generic = await genericAnalyzed(await sentStatement(run));
          entry +=
            " The generic plan of the statement with the page size written in, which PostgreSQL would keep " +
            `after five calls of a named statement, for these values (${executionMs(generic)} ms against ` +
            `${executionMs(plan)} ms):\n\n` +
            `\`\`\`\n${generic}\n\`\`\`\n`;
        } else entry += "\n";
      }
      report.push(entry);
    }
  }, 120_000);

  it("a search or an activity bound is planned for its values: the generic plan walks users_learners and reads nearly every learner for a rare term or a narrow window", async () => {
    for (const c of cases.filter((c) => c.rare)) {
      const run = (s: Sql) => statement(s, c);
      // A search's generic plan walks the same way with its limit a parameter.
      for (const asSent of c.filters.q ? [false, true] : [false]) {
        const generic = await genericAnalyzed(await sentStatement(run, asSent));
        expect(usersIndexes(generic), `${c.name}\n${generic}`).toEqual(["users_learners"]);
        expect(usersRowsTouched(generic), `${c.name}\n${generic}`).toBeGreaterThan(LEARNERS / 2);
      }
    }
  }, 60_000);

  it("what PostgreSQL does with a named search or activity statement after five calls (written down, not held: it turns on the statistics' estimates)", async () => {
    const terms = ["conceicao", "silva", "aluno12", "aluno123", "aluno1234"].map((q) => ({ q }));
    const month = Array.from({ length: 5 }, () => ({ activeSince: at(NOW - 30 * DAY) }));
    const probes: Array<[string, LearnerFilters[], LearnerFilters, boolean]> = [
      ["a search, its limit a parameter: five terms, then aluno12345", terms, { q: "aluno12345" }, true],
      ["a search, the page size written in: five terms, then aluno12345", terms, { q: "aluno12345" }, false],
      [
        "activeSince, the page size written in: five calls for the last 30 days, then the last 2 hours",
        month,
        { activeSince: at(NOW - 2 * HOUR) },
        false,
      ],
    ];
    for (const [name, first, last, asSent] of probes) {
      const form = (f: LearnerFilters) => sentStatement((s) => learnerStore(s).listQuery(f, TAKE), asSent);
      const { query } = await form(last);
      const entry = await onProbe(async (probe) => {
        await probe.unsafe(`prepare named as ${query}`);
        for (const f of first) await probe.unsafe(`execute named${argsOf((await form(f)).params)}`);
        const plan = planText(
          await probe.unsafe(
            `explain (analyze, costs off, timing on, summary on) execute named${argsOf((await form(last)).params)}`,
          ),
        );
        const [counts] = await probe<{ genericPlans: number; customPlans: number }[]>`
          select generic_plans::int as "genericPlans", custom_plans::int as "customPlans"
          from pg_prepared_statements where name = 'named'`;
        expect(counts!.genericPlans + counts!.customPlans).toBe(6);
        const kept = counts!.genericPlans > 0 ? "kept the generic plan" : "planned it for its values";
        return `#### ${name}\n\nat the sixth call PostgreSQL ${kept} (generic plans ${counts!.genericPlans}, custom plans ${counts!.customPlans}):\n\n\`\`\`\n${plan}\n\`\`\`\n`;
      });
      afterFive.push(entry);
    }
  }, 60_000);

  it("a page of 50 without a filter is a statement whose plan PostgreSQL keeps after five calls; a search keeps its page size a parameter; an activity bound is sent unnamed, never prepared", async () => {
    const probe = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const store = learnerStore(probe as unknown as Sql);
      for (let i = 0; i < 8; i++) {
        expect(await store.list({}, TAKE, cursor)).toHaveLength(TAKE);
        expect(await store.list({ q: i % 2 ? "aluno12345" : "conceicao" }, TAKE)).not.toHaveLength(0);
        expect(
          await store.list({ activeSince: at(NOW - (i % 2 ? 2 * HOUR : 30 * DAY)) }, TAKE),
        ).not.toHaveLength(0);
        expect(await store.list({ activeBefore: at(NOW - 60 * DAY) }, TAKE)).not.toHaveLength(0);
      }
      const statements = await probe<{ statement: string; generic_plans: number }[]>`
        select statement, generic_plans::int from pg_prepared_statements
        where statement like '%from users u%' and statement not like '%pg_prepared_statements%'`;
      const named = (part: string) => statements.filter((s) => s.statement.includes(part));
      const [page] = named("(u.created_at, u.id) > ($1, $2) order by u.created_at, u.id limit 51");
      expect(page?.generic_plans).toBeGreaterThanOrEqual(3);
      expect(named("search like").map((s) => /limit \$\d+/.test(s.statement))).toEqual([true]);
      expect(named("last_active_at >=")).toEqual([]);
      expect(named("last_active_at <")).toEqual([]);
    } finally {
      await probe.end({ timeout: 5 });
    }
  });
});

describe("GET /platform/users/{id} plan (EXPLAIN)", () => {
  it("docs/api/learners.md §GET /platform/users/{id}: each of the learner's lists (sessions, courses, lessons, certificates, library) is read by the learner's index, no sequential scan of a table of every learner's rows, in the plan made for its values and in the plan PostgreSQL keeps", async () => {
    // Active 91 hours before NOW: lessons and library reads inside the 30 days.
    const id = idOf(12_870);
    const since = at(NOW - 30 * DAY);
    const run = (s: Sql) => learnerStore(s).get(id, 30, since);
    expect((await run(sql))?.lessons.length).toBeGreaterThan(0);
    const custom = await planOf(databaseUrl, /from users u/, run, false);
    const params = [since, since, since, id].map((v) => (v instanceof Date ? v.toISOString() : v));
    const plan = planText(
      await sql.unsafe(`explain (analyze, costs off, timing on, summary on) ${custom.query}`, params),
    );
    const kept = await planOf(databaseUrl, /from users u/, run, true);
    for (const p of [plan, kept.plan]) {
      expect(p, p).toMatch(/Index Scan using users_pkey on users/);
      for (const [table, index] of [
        ["sessions", "sessions_by_user_at"],
        ["enrollments", "enrollments_pkey"],
        ["lesson_progress", "lesson_progress_pkey"],
        ["certificates", "certificates_by_user"],
        ["library_reads", "library_reads_pkey"],
      ])
        expect(p, `${table}\n${p}`).toMatch(
          new RegExp(`Index (Only )?Scan (Backward )?using ${index} on ${table}`),
        );
      // Only a catalog (courses, lessons, library documents) may be read whole, for a hash join.
      expect(p, p).not.toMatch(
        /Seq Scan on (users|sessions|enrollments|lesson_progress|certificates|library_reads)/,
      );
    }
    report.push(
      `### GET /platform/users/{id}?days=30\n\n\`\`\`\n${plan}\n\`\`\`\n\n` +
        `the plan PostgreSQL keeps for the statement (generic):\n\n\`\`\`\n${kept.plan}\n\`\`\`\n`,
    );
  });
});

afterAll(async () => {
  if (!process.env.EXPLAIN_OUT) return;
  const [row] = await onProbe((probe) => probe<{ version: string }[]>`select version()`);
  const version = row?.version ?? "";
  const machine = `${cpus().length} cores ${cpus()[0]?.model.trim()}, node ${process.version}, ${version.replace(/ on .*/, "")}`;
  writeFileSync(
    process.env.EXPLAIN_OUT,
    "# EXPLAIN of GET /platform/users\n\n" +
      `Run ${new Date().toISOString().slice(0, 10)} on ${machine}; the times are that run's.\n\n` +
      "Generated by `EXPLAIN_OUT=bench/EXPLAIN-learning.md npx vitest run services/learning/src/store/explain.test.ts`: " +
      "the store's own statements (services/learning/src/store/learners.ts, `listQuery` and `get`) for a page of 50 " +
      "(51 rows asked), EXPLAIN ANALYZE on PostgreSQL with 110 000 users, 100 000 of them learners, shaped as " +
      "bench/learning.mjs loads them (one name in seven holds Conceição, the last activity spread over 120 days), " +
      "and for a page without a filter the plan PostgreSQL keeps for the statement (its generic plan). A page " +
      "without a filter walks users_learners in (created_at, id) order from its cursor in both plans. An " +
      "activity bound is sent unnamed and planned for its values at every call; a search keeps its page size a " +
      "parameter, and PostgreSQL planned it for its values here (see the sixth call below). A rare term reads its " +
      "matches by the trigram index (users_search) and a narrow window by users_active, sorting only those rows; " +
      "a common term or a wide window walks users_learners and filters. For the rare values the generic plan is " +
      "written down too, EXPLAIN ANALYZEd: it walks users_learners and reads nearly every learner, which is what a " +
      "named statement runs once PostgreSQL keeps its plan after five calls (it does so whenever the generic " +
      "estimate is no worse than the plans made for the values: a page of 50 with a wide activeSince). The test " +
      "fails if a page is not served so.\n\n" +
      report.join("\n") +
      "\n## A named statement after five calls\n\n" +
      "What PostgreSQL does at the sixth call of a search or an activity bound sent as a named statement (as " +
      "it would be without plannedPerCall): written down, not held by the test, since it turns on the " +
      "estimates of the statistics ANALYZE gathered.\n\n" +
      afterFive.join("\n"),
  );
});
