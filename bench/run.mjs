// Load and scale benchmarks (`npm run bench`): starts its own stack (FUNIL_ENV=bench), fills a workspace,
// then drives the gateway with autocannon on loopback. Bounded in count and time; prints a Markdown table
// and writes it to bench/RESULTS.md. Numbers depend on the machine: compare runs on the same one.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import autocannon from "autocannon";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 20_000);
const DEALS = Number(process.env.BENCH_DEALS ?? 10_000);
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);

const env = { ...process.env, FUNIL_ENV: "bench", LOG_LEVEL: "warn", RATE_LIMIT_MAX: "100000000" };
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
const stack = await startStack({ env, port: 0, stdio: "ignore" });
const base = stack.gatewayUrl;

async function call(method, path, body, key) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key ?? stack.adminToken}`,
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

try {
  const ws = await call("POST", "/admin/v1/workspaces", { name: "bench" });
  const { secret: key } = await call("POST", `/admin/v1/workspaces/${ws.id}/keys`, {
    name: "bench",
    scopes: ["contacts.read", "contacts.write", "members.read", "opportunities.read", "opportunities.write"],
  });
  /** Runs `count` calls of `one(i)` with 16 clients; returns the seconds it took. */
  async function fill(count, one) {
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) await one(next++);
      }),
    );
    return (Date.now() - started) / 1000;
  }
  const contactIds = [];
  const fillSeconds = await fill(CONTACTS, async (i) => {
    contactIds[i] = await call(
      "POST",
      "/api/v1/contacts",
      {
        name: `Contact ${i} São`,
        phone: `+55 11 9${String(i).padStart(8, "0")}`,
        email: `c${i}@bench.io`,
        tags: [i % 10 === 0 ? "vip" : "std"],
      },
      key,
    ).then((c) => c.id);
  });
  const pipeline = await call("POST", `/admin/v1/workspaces/${ws.id}/pipelines`, {
    name: "Bench",
    stages: [{ name: "A" }, { name: "B" }, { name: "C" }, { name: "D" }],
  });
  const dealSeconds = await fill(DEALS, async (i) => {
    const deal = await call(
      "POST",
      "/api/v1/opportunities",
      {
        contactId: contactIds[i % CONTACTS],
        pipelineId: pipeline.id,
        stageId: pipeline.stages[i % 4].id,
        title: `Deal ${i}`,
        valueCents: 1000 * (i % 97),
        utmSource: i % 2 ? "google" : "youtube",
      },
      key,
    );
    if (i % 4 === 3)
      await call("PATCH", `/api/v1/opportunities/${deal.id}`, { status: i % 8 === 3 ? "won" : "lost" }, key);
  });
  // Fresh statistics, and visibility maps, as autovacuum would have them by now. Some servers run with autovacuum=off
  // (this machine's does): there, plans after a bulk load are guesses until someone runs ANALYZE.
  const db = postgres(
    `${(env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres").replace(/\/[^/]*$/, "")}/funil_bench_crm`,
    {
      max: 1,
      onnotice: () => {},
    },
  );
  const [{ autovacuum }] = await db`select current_setting('autovacuum') as autovacuum`;
  await db`vacuum analyze`;
  await db.end();
  const deep = await (async () => {
    let cursor = null;
    for (let seen = 0; seen < CONTACTS - 500; seen += 500) {
      const page = await call(
        "GET",
        `/api/v1/contacts?limit=500${cursor ? `&cursor=${cursor}` : ""}`,
        undefined,
        key,
      );
      cursor = page.nextCursor;
    }
    return cursor;
  })();
  const one = (await call("GET", "/api/v1/contacts?limit=1", undefined, key)).data[0];

  const aDeal = (await call("GET", "/api/v1/opportunities?limit=1", undefined, key)).data[0];
  const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString();
  const scenarios = [
    ["GET /contacts (first page, limit 50)", { path: "/api/v1/contacts" }],
    [`GET /contacts (page at depth ${CONTACTS - 500})`, { path: `/api/v1/contacts?limit=50&cursor=${deep}` }],
    ["GET /contacts?tag=vip", { path: "/api/v1/contacts?tag=vip" }],
    ["GET /contacts?query=9000123 (trigram search)", { path: "/api/v1/contacts?query=9000123" }],
    ["GET /contacts?email=… (exact)", { path: "/api/v1/contacts?email=c777%40bench.io" }],
    ["GET /contacts/{id}", { path: `/api/v1/contacts/${one.id}` }],
    [
      "POST /contacts (upsert of an existing contact)",
      { path: "/api/v1/contacts", method: "POST", body: JSON.stringify({ phone: one.phone, tags: ["std"] }) },
    ],
    ["GET /opportunities (first page, limit 50)", { path: "/api/v1/opportunities" }],
    [
      "GET /opportunities?status=won&pipelineId=…",
      { path: `/api/v1/opportunities?status=won&pipelineId=${pipeline.id}` },
    ],
    ["GET /opportunities/{id}", { path: `/api/v1/opportunities/${aDeal.id}` }],
    [
      "POST /opportunities (new Idempotency-Key each)",
      {
        path: "/api/v1/opportunities",
        method: "POST",
        body: JSON.stringify({ contactId: one.id, pipelineId: pipeline.id, title: "Bench deal" }),
        idempotent: true,
      },
    ],
    [`GET /funnel (${DEALS} deals, all time)`, { path: `/api/v1/funnel?pipelineId=${pipeline.id}` }],
    [
      "GET /funnel (last 30 days)",
      { path: `/api/v1/funnel?pipelineId=${pipeline.id}&from=${encodeURIComponent(monthAgo)}` },
    ],
  ];
  const rows = [];
  for (const [name, opts] of scenarios) {
    const result = await autocannon({
      url: `${base}${opts.path}`,
      method: opts.method ?? "GET",
      body: opts.body,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      connections: CONNECTIONS,
      duration: DURATION,
      // A fresh key per request, so each one really creates (a repeated key would be a replay).
      requests: opts.idempotent
        ? [
            {
              setupRequest: (req) => ({
                ...req,
                headers: { ...req.headers, "idempotency-key": randomUUID() },
              }),
            },
          ]
        : undefined,
    });
    const errors = result.non2xx + result.errors;
    rows.push(
      `| ${name} | ${Math.round(result.requests.average)} | ${result.latency.p50} | ${result.latency.p99} | ${errors} |`,
    );
    process.stderr.write(`${rows.at(-1)}\n`);
  }
  const table = [
    `Workspace of ${CONTACTS} contacts and ${DEALS} deals, filled through the API with 16 clients: ${Math.round(CONTACTS / fillSeconds)} contact upserts/s, ${Math.round(DEALS / dealSeconds)} deals/s (a quarter of them then closed by PATCH).`,
    `${CONNECTIONS} connections, ${DURATION} s per row, gateway + crm + PostgreSQL + Redis on one ${process.platform} machine (PostgreSQL autovacuum ${autovacuum}; VACUUM ANALYZE run after the fill).`,
    "",
    "| scenario | req/s | p50 ms | p99 ms | non-2xx |",
    "|---|---|---|---|---|",
    ...rows,
  ].join("\n");
  console.log(table);
  writeFileSync(
    new URL("./RESULTS.md", import.meta.url),
    `# Benchmark results\n\n${new Date().toISOString()}\n\n${table}\n`,
  );
} finally {
  await stack.stop();
}
