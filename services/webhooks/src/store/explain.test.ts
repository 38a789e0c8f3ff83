import { writeFileSync } from "node:fs";
import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql, SYSTEM } from "@funil/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../server.js";
import { attemptStore } from "./attempts.js";
import { deliveryStore } from "./deliveries.js";
import { eventLogStore } from "./event-log.js";
import { resendStore } from "./resend.js";
import { subscriptionStore } from "./subscriptions.js";

/**
 * The list queries of the webhooks service use indexes that match their filters and order (docs/api/
 * conventions.md §Lists and pagination): the very statements the stores send, EXPLAINed on 100 000
 * logged events, 100 000 deliveries and 100 000 attempts over 51 workspaces, half of each in one, and
 * 20 204 subscriptions.
 * `EXPLAIN_OUT=bench/EXPLAIN-webhooks.md` writes the plans down.
 */
const names = naming(`${process.env.FUNIL_TEST_ENV}_hooksplans`);
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const url = Object.assign(new URL(server), { pathname: `/${names.database("webhooks")}` }).href;
const WS = "ws_explain";
const SUB = "whx_0_0";
/** A tenth of what the workspace (or the subscription) holds: no node of a page's plan returns more. */
const MAX_ROWS = 5_000;
let sql: Sql;

beforeAll(async () => {
  // As the service opens it: every statement planned for its values (server.ts customPlans).
  sql = await openDatabase(server, names.database("webhooks"), { customPlans: true, max: 1 });
  await migrate(sql, migrations);
  await sql.begin(async (tx) => {
    for (const t of ["attempts", "deliveries", "subscriptions", "event_log"])
      await tx.unsafe(`delete from ${t}`);
    await tx`
      insert into subscriptions (id, workspace_id, key_id, url, events, secret, created_at, updated_at)
      select 'whx_' || w || '_' || s, case when w = 0 then ${WS} else 'ws_x' || w end, 'key_x',
             'https://hooks.example.com/' || s, array['contact.created', 'opportunity.won'], 'whsec_x',
             timestamptz '2025-01-01' + s * interval '1 day', timestamptz '2025-01-01'
      from generate_series(0, 50) w, generate_series(0, 3) s`;
    // A handful of subscriptions in each of 5 000 more workspaces: the table of a service with many customers.
    await tx`
      insert into subscriptions (id, workspace_id, key_id, url, events, secret, created_at, updated_at)
      select 'whf_' || w || '_' || s, 'ws_f' || w, 'key_f', 'https://hooks.example.com/' || s,
             array['contact.created'], 'whsec_f', timestamptz '2025-01-01' + s * interval '1 day',
             timestamptz '2025-01-01'
      from generate_series(1, 5000) w, generate_series(0, 3) s`;
    // Half the deliveries and attempts in one subscription of the workspace, the rest over the others'
    // subscriptions; one in 20 dead (failed), one event type in 100 rare.
    const kind = `(array['contact.created', 'contact.updated', 'opportunity.created', 'opportunity.won'])[1 + i % 4]`;
    const rows = (n: number) =>
      tx.unsafe(`
      select i, case when i <= 50000 then 0 else 1 + i % 50 end as w,
             case when i % 100 = 7 then 'meeting.booked' else ${kind} end as event,
             timestamptz '2025-01-01' + (1 + (i - 1) % 50000) * interval '1 minute' as ts
      from generate_series(1, ${n}) i`);
    await tx`
      insert into deliveries (id, subscription_id, workspace_id, event_id, event, body, status, attempts, created_at)
      select 'dlvx_' || lpad(i::text, 7, '0'), 'whx_' || w || '_' || case when w = 0 then 0 else i % 4 end,
             case when w = 0 then ${WS} else 'ws_x' || w end, 'evtx_' || i, event, '{}',
             case when i % 20 = 0 then 'dead' else 'delivered' end, 1, ts
      from (${rows(100_000)}) g`;
    await tx`
      insert into attempts (id, delivery_id, subscription_id, workspace_id, event, at, succeeded,
        response_status, duration_ms)
      select 'attx_' || lpad(i::text, 7, '0'), 'dlvx_' || lpad(i::text, 7, '0'),
             'whx_' || w || '_' || case when w = 0 then 0 else i % 4 end,
             case when w = 0 then ${WS} else 'ws_x' || w end, event, ts, i % 20 <> 0,
             case when i % 20 = 0 then 500 else 200 end, 30
      from (${rows(100_000)}) g`;
    // The event log in stream order, every other event the workspace's; types as skewed as a CRM's
    // (contact updates most, a won deal 2 %, a meeting 1 %, a webhook change 0.5 %); the first tenth
    // logged without an actor (not in GET /audit).
    await tx`
      insert into event_log (id, workspace_id, seq, type, occurred_at, body, entity_type, entity_id, actor,
        request_id, changes)
      select 'evtx_' || lpad(i::text, 7, '0'), case when i % 2 = 0 then ${WS} else 'ws_x' || (1 + (i / 2) % 50) end,
             i, type, timestamptz '2025-01-01' + i * interval '1 minute', '{}', split_part(type, '.', 1),
             split_part(type, '.', 1) || '_' || (i / 2) % 2000,
             case when i > 10000 then 'key:key_x' end, 'req', array['name']
      from (select i, case
              when k < 400 then 'contact.updated' when k < 600 then 'contact.created'
              when k < 750 then 'opportunity.updated' when k < 850 then 'opportunity.created'
              when k < 900 then 'task.created' when k < 965 then 'note.created'
              when k < 985 then 'opportunity.won' when k < 995 then 'meeting.booked'
              else 'webhook.updated' end as type
            from (select i, (i / 2) * 7 % 1000 as k from generate_series(1, 100000) i) r) g`;
  });
  await sql`analyze`;
}, 120_000);

afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

const planText = (rows: readonly object[]) => rows.map((r) => Object.values(r)[0] as string).join("\n");
/** A plan's nodes and the indexes they use, without the values in their conditions. */
const shape = (plan: string) =>
  plan.match(/(Limit|Sort|Seq Scan|(Bitmap )?Index (Only )?Scan( Backward)? using \w+|Bitmap Heap Scan)/g);
/** The most rows any node of an EXPLAIN ANALYZE returned. */
const mostRows = (plan: string) => Math.max(...[...plan.matchAll(/rows=(\d+)/g)].map((m) => Number(m[1])));
/** A value as an SQL literal, for EXECUTE's arguments. */
const literal = (v: unknown) =>
  `'${(v instanceof Date ? v.toISOString() : Array.isArray(v) ? `{${v.join(",")}}` : String(v)).replaceAll("'", "''")}'`;

type Stores = ReturnType<typeof storesOn>;
const storesOn = (db: Sql) => ({
  events: eventLogStore(db),
  attempts: attemptStore(db),
  deliveries: deliveryStore(
    db,
    (id) => id,
    async () => {},
  ),
  resends: resendStore(
    db,
    (id) => id,
    async () => {},
  ),
  subscriptions: subscriptionStore(db, async () => {}),
});

/**
 * The list reads of the routes, each with the statement it sends, the index it should walk, and whether
 * its page size is written into the statement (pageLimit's `planned`).
 */
const at = (s: string) => new Date(s);
const FOREVER = 1_000_000;
const READABLE = [
  "contact.created",
  "contact.updated",
  "opportunity.created",
  "opportunity.updated",
  "opportunity.won",
];
const cases: Array<[string, (s: Stores) => Promise<unknown>, RegExp, string, boolean]> = [
  [
    "GET /webhooks",
    (s) => s.subscriptions.list(WS),
    /from subscriptions where/,
    "subscriptions_by_workspace",
    true,
  ],
  [
    "GET /webhooks/{id}/deliveries (the 50 most recent)",
    (s) => s.deliveries.recent(SUB),
    /from deliveries where/,
    "deliveries_recent",
    true,
  ],
  [
    "GET /webhooks/{id}/attempts",
    (s) => s.attempts.list(SUB, {}, 101, undefined),
    /from attempts/,
    "attempts_by_subscription",
    true,
  ],
  [
    "GET /webhooks/{id}/attempts (a later page: cursor)",
    (s) => s.attempts.list(SUB, {}, 101, [at("2025-01-20T00:00:00Z"), "attx_0028000"]),
    /from attempts/,
    "attempts_by_subscription",
    true,
  ],
  [
    "GET /webhooks/{id}/attempts?status=failed (1 in 20)",
    (s) => s.attempts.list(SUB, { succeeded: false }, 101, undefined),
    /from attempts/,
    "attempts_by_subscription",
    true,
  ],
  [
    "GET /webhooks/{id}/attempts?event= (1 in 100)",
    (s) => s.attempts.list(SUB, { event: "meeting.booked" }, 101, undefined),
    /from attempts/,
    "attempts_by_subscription",
    true,
  ],
  [
    "GET /webhooks/{id}/attempts?from=&to= (one day)",
    (s) =>
      s.attempts.list(
        SUB,
        { from: at("2025-01-10T00:00:00Z"), to: at("2025-01-11T00:00:00Z") },
        101,
        undefined,
      ),
    /from attempts/,
    "attempts_by_subscription",
    true,
  ],
  [
    "GET /events (every readable type)",
    (s) => s.events.list(WS, READABLE, 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_workspace",
    false,
  ],
  [
    "GET /events?after= (a later position)",
    (s) => s.events.list(WS, READABLE, 60_000, FOREVER, 101),
    /from event_log/,
    "event_log_by_workspace",
    false,
  ],
  [
    "GET /events?type=meeting.booked (1 % of the events)",
    (s) => s.events.list(WS, ["meeting.booked"], 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_type",
    false,
  ],
  [
    "GET /events?type=contact.created,contact.updated (60 %)",
    (s) => s.events.list(WS, ["contact.created", "contact.updated"], 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_workspace",
    false,
  ],
  [
    "GET /events?type=opportunity.won,meeting.booked (3 %)",
    (s) => s.events.list(WS, ["opportunity.won", "meeting.booked"], 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_",
    false,
  ],
  [
    "GET /audit",
    (s) => s.events.audit(WS, {}, 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_workspace",
    false,
  ],
  [
    "GET /audit?entity=contact",
    (s) => s.events.audit(WS, { entity: "contact" }, 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_workspace",
    false,
  ],
  [
    "GET /audit?entity=webhook (0.5 %)",
    (s) => s.events.audit(WS, { entity: "webhook" }, 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_",
    false,
  ],
  [
    "GET /audit?entity=contact&id=",
    (s) => s.events.audit(WS, { entity: "contact", id: "contact_7" }, 0, FOREVER, 101),
    /from event_log/,
    "event_log_by_entity",
    false,
  ],
  [
    "GET /audit?after= (the last tenth)",
    (s) => s.events.audit(WS, { since: at("2025-03-03T00:00:00Z") }, 0, FOREVER, 101),
    /from event_log/,
    // The planner walks the workspace in seq order and filters: its estimate cannot see that recent events
    // sit at the end of the stream.
    "event_log_by_workspace",
    false,
  ],
  [
    "POST /webhooks/{id}/recover (its dead deliveries, oldest first)",
    (s) =>
      s.resends.recover(
        SUB,
        at("2025-01-01T00:00:00Z"),
        at("2025-03-01T00:00:00Z"),
        at("2025-03-01T00:00:00Z"),
        100,
        { workspaceId: WS, by: SYSTEM },
      ),
    /status = 'dead'\s+and created_at >=/,
    "deliveries_recent",
    false,
  ],
];

/** Runs a store read on a connection of its own, and answers the statement it sent matching `pattern`. */
async function sent(run: (s: Stores) => Promise<unknown>, pattern: RegExp) {
  let found: { query: string; params: unknown[] } | undefined;
  const probe = postgres(url, {
    max: 1,
    onnotice: () => {},
    transform: { column: { from: postgres.toCamel, to: postgres.fromCamel } },
    debug: (_c, query, params) => {
      if (pattern.test(query) && !found) found = { query, params };
    },
  });
  try {
    await run(storesOn(probe as unknown as Sql));
  } finally {
    await probe.end({ timeout: 5 });
  }
  if (!found) throw new Error(`no statement matching ${pattern} was sent`);
  return found;
}

describe("list queries use their indexes (EXPLAIN)", () => {
  it("docs/api/conventions.md §Lists and pagination: every list of subscriptions, deliveries, attempts, events and audit entries is read through an index in its keyset order: no sequential scan, no node returns more than a tenth of the workspace (no sort of a whole workspace)", async () => {
    // The recover's requeue finds the subscription inactive and changes nothing.
    await sql`update subscriptions set active = false where id = ${SUB}`;
    const report: string[] = [];
    for (const [name, run, pattern, index] of cases) {
      const { query, params } = await sent(run, pattern);
      const plan = planText(
        await sql.unsafe(`explain (analyze, costs off, timing on, summary on) ${query}`, params as never[]),
      );
      report.push(`### ${name}\n\nexpected index: \`${index}\`\n\n\`\`\`\n${plan}\n\`\`\`\n`);
      expect.soft(plan, name).toContain(index);
      expect.soft(plan, name).not.toMatch(/Seq Scan/);
      expect.soft(mostRows(plan), name).toBeLessThanOrEqual(MAX_ROWS);
    }
    if (process.env.EXPLAIN_OUT) {
      writeFileSync(
        process.env.EXPLAIN_OUT,
        "# EXPLAIN of the webhooks service's list queries\n\n" +
          "Generated by `EXPLAIN_OUT=bench/EXPLAIN-webhooks.md npx vitest run services/webhooks/src/store/explain.test.ts`: " +
          "the statements the stores send (services/webhooks/src/store/), EXPLAIN ANALYZE on PostgreSQL with " +
          "100 000 logged events, 100 000 deliveries and 100 000 attempts over 51 workspaces, half of each in " +
          "the workspace queried (its deliveries and attempts in one subscription), and 20 204 subscriptions. " +
          "Every list walks an index in the order of its keyset, no node returns more than a tenth of the " +
          "workspace, no sequential scan; the test fails otherwise. Two lists sort, each only its few rows: " +
          "GET /webhooks (a workspace's handful of subscriptions) and GET /audit of a kind of entity rare in " +
          "the log (read through event_log_by_entity). The database plans every statement for its values " +
          "(server.ts customPlans), so these are the plans that run. One known planner choice: with " +
          "`after=`, GET /audit walks the workspace in seq order and filters, because its estimate cannot see " +
          "that recent events sit at the end of the stream; it reads every event before the instant.\n\n" +
          report.join("\n"),
      );
    }
  }, 60_000);

  it("a page size written into the statement is one whose generic plan is the plan made for its values; the event log's lists keep it a parameter", async () => {
    const generic = postgres(url, {
      max: 1,
      onnotice: () => {},
      connection: { plan_cache_mode: "force_generic_plan" },
    });
    try {
      for (const [i, [name, run, pattern, index, planned]] of cases.entries()) {
        const { query, params } = await sent(run, pattern);
        expect.soft(query, name).toMatch(planned ? /limit \d+\s*$/ : /limit \$\d+\s*$/);
        if (!planned) continue;
        await generic.unsafe(`prepare kept_${i} as ${query}`);
        const args = params.length ? `(${params.map(literal).join(", ")})` : "";
        const kept = planText(await generic.unsafe(`explain (costs off) execute kept_${i}${args}`));
        const made = planText(await sql.unsafe(`explain (costs off) ${query}`, params as never[]));
        expect.soft(kept, name).toContain(index);
        expect.soft(shape(kept), name).toEqual(shape(made));
      }
    } finally {
      await generic.end({ timeout: 5 });
    }
  }, 60_000);
});
