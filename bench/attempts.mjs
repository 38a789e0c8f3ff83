// The attempt log's cost per delivery (docs/benchmarks.md), on a scratch database: the statement that
// records successful attempts, 64 deliveries at a time as the sender batches them, with and without its
// attempt insert, and with the attempt log's time index as a B-tree, a BRIN or none. The PostgreSQL
// backend's CPU per delivery comes from /proc (what the bench's noise on a shared machine hides), the
// variants alternate within each round so that the machine's drift falls on all of them.
// `node bench/attempts.mjs` after `npm run build`; BENCH_DELIVERIES (40 000) per variant and round,
// BENCH_ROUNDS (3). Prints a Markdown table.
import { migrate, newId, openDatabase } from "@funil/db";
import { migrations } from "../services/webhooks/dist/server.js";
import { deliveryStore } from "../services/webhooks/dist/store/deliveries.js";
import { cpuSeconds } from "./procstat.mjs";

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 40_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = 64;
const SUBSCRIPTIONS = 20;
const server = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = `funil_${process.env.BENCH_ENV ?? "benchattempts"}_webhooks`;

const sql = await openDatabase(server, database, { max: 1, idleTimeoutS: 0, customPlans: true });
await migrate(sql, migrations);
const [{ pid }] = await sql`select pg_backend_pid() as pid`;
const store = deliveryStore(sql, (id) => `bench.webhook.deliveries.${id}`);

/** The attempt log's table without its indexes (migrations/00007_attempts.sql); each variant adds its own. */
const TABLE = `create table attempts (id text not null, delivery_id text not null, subscription_id text not null,
  workspace_id text not null, event text not null, at timestamptz not null, succeeded boolean not null,
  response_status int, duration_ms int not null, response_body text, error text)`;
const KEYSET = "create index attempts_by_subscription on attempts (subscription_id, at desc, id desc)";
const LAYOUTS = {
  // The migration's: its primary key, the keyset of a subscription's log, a B-tree on at for the sweep.
  btree: [
    "alter table attempts add primary key (id)",
    KEYSET,
    "create index attempts_by_time on attempts (at)",
  ],
  brin: [
    "alter table attempts add primary key (id)",
    KEYSET,
    "create index attempts_by_time on attempts using brin (at)",
  ],
  none: ["alter table attempts add primary key (id)", KEYSET],
  // One B-tree: the keyset as the primary key (the id alone is never looked up), a BRIN for the sweep.
  keysetKey: [
    "alter table attempts add primary key (subscription_id, at, id)",
    "create index attempts_by_time on attempts using brin (at)",
  ],
};

/** The recording statement without its attempt insert: the delivery's outcome alone. */
async function outcomesOnly(done) {
  await sql`
    with healthy as (
      update subscriptions set failing_since = null, updated_at = now()
      where id = any(${[...new Set(done.map((d) => d.delivery.subscriptionId))]}::text[])
        and failing_since is not null)
    update deliveries set status = 'delivered', attempts = a.attempts, response_status = a.status,
      last_error = null, last_attempt_at = a.at, next_attempt_at = null
    from unnest(${done.map((d) => d.delivery.id)}::text[], ${done.map((d) => d.delivery.attempts + 1)}::int[],
      ${done.map((d) => d.status)}::int[], ${done.map((d) => d.at.toISOString())}::timestamptz[]) as a(id, attempts, status, at)
    where deliveries.id = a.id`;
}

const VARIANTS = [
  { name: "no attempt log", layout: "btree", record: outcomesOnly },
  {
    name: "attempt log: primary key id, keyset, B-tree on at",
    layout: "btree",
    record: store.recordDelivered,
  },
  { name: "attempt log: primary key id, keyset, BRIN on at", layout: "brin", record: store.recordDelivered },
  {
    name: "attempt log: primary key id, keyset, nothing on at",
    layout: "none",
    record: store.recordDelivered,
  },
  {
    name: "attempt log: the keyset as primary key, BRIN on at",
    layout: "keysetKey",
    record: store.recordDelivered,
  },
];

/** Pending deliveries, as a fan-out leaves them: DELIVERIES / 20 events to 20 subscriptions. */
async function pending(workspaceId) {
  const subs = [];
  for (let i = 0; i < SUBSCRIPTIONS; i++) {
    const id = newId("wh", Date.now());
    await sql`insert into subscriptions (id, workspace_id, key_id, url, events, secret, created_at, updated_at)
      values (${id}, ${workspaceId}, 'key_bench', 'https://example.com/hook', ${["contact.created"]}, 'whsec_x', now() - interval '1 day', now())`;
    subs.push(id);
  }
  for (let i = 0; i < DELIVERIES / SUBSCRIPTIONS; i += BATCH) {
    const events = Array.from({ length: Math.min(BATCH, DELIVERIES / SUBSCRIPTIONS - i) }, (_, j) => ({
      id: newId("evt", Date.now()),
      type: "contact.created",
      workspaceId,
      occurredAt: new Date().toISOString(),
      data: { id: `ct_${i + j}`, name: "Maria Souza", email: "maria@example.com", tags: ["lead"] },
      seq: i + j + 1,
    }));
    await store.fanOut(events, new Date());
  }
  return sql`select d.id, d.subscription_id, d.workspace_id, d.event, d.attempts from deliveries d
    where d.workspace_id = ${workspaceId} and d.status = 'pending' order by d.id`;
}

async function measure(variant, round) {
  await sql`truncate deliveries, subscriptions, event_log, inbox, outbox, job_leases`;
  await sql`drop table attempts`;
  for (const ddl of [TABLE, ...LAYOUTS[variant.layout]]) await sql.unsafe(ddl);
  const rows = await pending(`ws_bench_${round}`);
  await sql`vacuum analyze deliveries`;
  const cpu = cpuSeconds(pid);
  const node = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < rows.length; i += BATCH) {
    const at = new Date();
    await variant.record(
      rows.slice(i, i + BATCH).map((delivery) => ({
        delivery,
        status: 200,
        at,
        attempt: { at, durationMs: 3, body: "" },
      })),
    );
  }
  const ms = performance.now() - started;
  const { user, system } = process.cpuUsage(node);
  return {
    us: ((cpuSeconds(pid) - cpu) * 1e6) / rows.length,
    nodeUs: (user + system) / rows.length,
    wallUs: (ms * 1000) / rows.length,
  };
}

const results = new Map(VARIANTS.map((v) => [v.name, []]));
try {
  for (let round = 1; round <= ROUNDS; round++)
    for (const variant of VARIANTS) {
      const r = await measure(variant, round);
      results.get(variant.name).push(r);
      process.stderr.write(
        `[bench:attempts] round ${round} ${variant.name}: ${r.us.toFixed(1)} µs PostgreSQL CPU, ${r.nodeUs.toFixed(1)} µs caller CPU, ${r.wallUs.toFixed(1)} µs wall per delivery\n`,
      );
    }
} finally {
  await sql.end();
}
const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
const base = median(results.get(VARIANTS[0].name).map((r) => r.us));
process.stdout.write(
  "| variant | PostgreSQL CPU µs per delivery (median; rounds) | caller's CPU µs per delivery (median) | wall µs per delivery (median) | PostgreSQL vs no attempt log |\n|---|---|---|---|---|\n",
);
for (const [name, rs] of results) {
  const us = median(rs.map((r) => r.us));
  process.stdout.write(
    `| ${name} | ${us.toFixed(1)} (${rs.map((r) => r.us.toFixed(1)).join(", ")}) | ${median(rs.map((r) => r.nodeUs)).toFixed(1)} | ${median(rs.map((r) => r.wallUs)).toFixed(1)} | +${(us - base).toFixed(1)} |\n`,
  );
}
