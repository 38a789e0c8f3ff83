// crm's load benchmark (`npm run bench:crm`; `npm run bench` runs it with the others, bench/all.mjs):
// starts its own stack (FUNIL_ENV=bench), fills a workspace through the API, starts the bare baseline (bare.mjs) on the same data, then drives both with autocannon
// on loopback, several runs per row, and reports medians: req/s, latencies, the gateway/bare ratio, and
// the CPU time per request and RSS of every process, read from /proc. Writes bench/RESULTS.md.
//
//   npm run bench:crm                 default: a few minutes
//   npm run bench:crm -- --full       the larger run (more rows, longer and more runs)
//   BENCH_PROFILE=1 npm run bench:crm gateway and crm under node --cpu-prof; prints their top functions
//   BENCH_ONLY='contacts/\{id\}'       only the scenarios whose name matches
//   BENCH_OPEN_LOOP=0                 without the open-loop rows (quicker comparisons of one change)
//   BENCH_QUICK=1                     1 run of 2 s per row, no open loop (for iterating)
//   BENCH_NODE_ARGS='--max-semi-space-size=32'   node flags for every process under test (bare too)
// BENCH_CONTACTS, BENCH_DEALS, BENCH_SECONDS, BENCH_RUNS, BENCH_CONNECTIONS (e.g. 8,32) and BENCH_ENV
// (the FUNIL_ENV of its databases and streams, default bench) change the run.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { isDeepStrictEqual } from "node:util";
import { Redis } from "ioredis";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { heapFlags, startStack } from "../scripts/stack.mjs";
import { apiClient, fill } from "./fill.mjs";
import { measure, median } from "./load.mjs";
import { byPackage, profilesIn, topSelfTime } from "./profile.mjs";
import { renderResults } from "./report.mjs";

const FULL = process.argv.includes("--full") || process.env.BENCH_FULL === "1";
/** BENCH_QUICK=1: short runs for iterating on one change (bench/compare.mjs reads it too). */
const QUICK = process.env.BENCH_QUICK === "1";
const numberOf = (name, fallback) => Number(process.env[name] ?? fallback);
const opts = {
  contacts: numberOf("BENCH_CONTACTS", FULL ? 20_000 : 5_000),
  deals: numberOf("BENCH_DEALS", FULL ? 10_000 : 2_500),
  seconds: numberOf("BENCH_SECONDS", FULL ? 10 : QUICK ? 2 : 3),
  runs: numberOf("BENCH_RUNS", FULL ? 5 : QUICK ? 1 : 3),
  connections: (process.env.BENCH_CONNECTIONS ?? "8,32").split(",").map(Number),
  only: process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined,
  profile: process.env.BENCH_PROFILE === "1",
  nodeArgs: (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean),
  openLoop: process.env.BENCH_OPEN_LOOP !== "0" && !QUICK,
  funilEnv: process.env.BENCH_ENV ?? "bench",
};
const started = Date.now();
/** ", failed: 503 × 12, timeouts × 3" when a run had answers other than 2xx. */
const failures = (m) =>
  m.errors
    ? `, failed: ${Object.entries(m.errorKinds)
        .map(([k, n]) => `${k} × ${n}`)
        .join(", ")}`
    : "";
const progress = (msg) => {
  const s = Math.round((Date.now() - started) / 1000);
  process.stderr.write(`[bench ${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}] ${msg}\n`);
};

const env = { ...process.env, FUNIL_ENV: opts.funilEnv, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
// Far above what the bench sends: the limiter still runs on every request, it just never says no.
env.RATE_LIMIT_MAX = "1000000000";
// One cursor key for the stack and the bare route, so that both sign a next cursor alike.
env.CURSOR_KEYS ||= randomBytes(32).toString("base64url");
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
const serverUrl = env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const databaseUrl = (name) => {
  const u = new URL(serverUrl);
  u.pathname = `/funil_${opts.funilEnv}_${name}`;
  return u.toString();
};

await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
const server = postgres(serverUrl, { max: 1, onnotice: () => {} });
// Every run starts from empty databases, so its tables hold exactly the rows it wrote. Only its own:
// funil_bench_<service>, not another bench's funil_bench_<env>_<service> (no service name has a "_").
for (const { datname } of await server`
  select datname from pg_database where datname like ${`funil\\_${opts.funilEnv}\\_%`}`)
  if (!datname.slice(`funil_${opts.funilEnv}_`.length).includes("_"))
    await server.unsafe(`drop database if exists "${datname}" with (force)`);

// The processes on the path of the paired reads: the single reads compose crm and timeline.
const PROFILED = ["gateway", "crm", "timeline"];
const profileDir = opts.profile ? mkdtempSync(path.join(os.tmpdir(), "funil-bench-prof-")) : undefined;
const launch = (profiled) => {
  progress(
    `starting the stack (FUNIL_ENV=${opts.funilEnv}${profiled ? `, ${PROFILED.join(", ")} under --cpu-prof` : ""})`,
  );
  return startStack({
    env,
    port: 0,
    stdio: "ignore",
    nodeArgs: (name) => [
      ...opts.nodeArgs,
      ...(profiled && PROFILED.includes(name)
        ? ["--cpu-prof", `--cpu-prof-dir=${path.join(profileDir, name)}`]
        : []),
    ],
  });
};
let stack = await launch(false);
let bare;
try {
  // Through whichever stack runs now (the profiled one replaces the first).
  const call = (...args) => apiClient(stack.gatewayUrl, stack.adminToken)(...args);
  progress(`filling ${opts.contacts} contacts and ${opts.deals} deals through the API`);
  const data = await fill({
    call,
    contacts: opts.contacts,
    deals: opts.deals,
    crmDatabaseUrl: databaseUrl("crm"),
    progress,
  });
  if (profileDir) {
    // The profiles should show the measured requests, not the fill: a fresh stack on the filled databases.
    await stack.stop();
    stack = await launch(true);
  }
  bare = await startBare({
    BARE_CRM_DB: databaseUrl("crm"),
    BARE_TIMELINE_DB: databaseUrl("timeline"),
    BARE_GATEWAY_DB: databaseUrl("gateway"),
  });
  const { key, pipeline } = data;
  const get = (p) => call("GET", `/api/v1${p}`, undefined, key);
  const one = (await get("/contacts?limit=1")).data[0];
  const aDeal = (await get("/opportunities?limit=1")).data[0];
  const deep = await cursorAt(get, opts.contacts - 500);
  const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString();
  const upsert = { method: "POST", body: JSON.stringify({ phone: one.phone, tags: ["std"] }) };

  const paired = [
    { name: "GET /contacts/{id}", path: `/contacts/${one.id}` },
    { name: "GET /opportunities/{id}", path: `/opportunities/${aDeal.id}` },
    { name: "GET /contacts?limit=50", path: "/contacts?limit=50" },
    { name: "GET /opportunities?limit=50", path: "/opportunities?limit=50" },
    { name: "POST /contacts (upsert of an existing contact)", path: "/contacts", ...upsert, once: true },
  ].filter((s) => !opts.only || opts.only.test(s.name));
  const alone = [
    {
      name: `GET /contacts (page at depth ${opts.contacts - 500})`,
      path: `/contacts?limit=50&cursor=${deep}`,
    },
    { name: "GET /contacts?tag=vip", path: "/contacts?tag=vip" },
    { name: "GET /contacts?query=9000123 (trigram search)", path: "/contacts?query=9000123" },
    { name: "GET /contacts?email=… (exact)", path: "/contacts?email=c777%40bench.io" },
    {
      name: "GET /opportunities?status=won&pipelineId=…",
      path: `/opportunities?status=won&pipelineId=${pipeline.id}`,
    },
    {
      name: "POST /opportunities (new Idempotency-Key each)",
      path: "/opportunities",
      method: "POST",
      body: JSON.stringify({ contactId: one.id, pipelineId: pipeline.id, title: "Bench deal" }),
      idempotent: true,
    },
    { name: `GET /funnel (${opts.deals} deals, all time)`, path: `/funnel?pipelineId=${pipeline.id}` },
    {
      name: "GET /funnel (last 30 days)",
      path: `/funnel?pipelineId=${pipeline.id}&from=${encodeURIComponent(monthAgo)}`,
    },
  ].filter((s) => !opts.only || opts.only.test(s.name));

  // The same answer from both, or the comparison means nothing.
  for (const s of paired) {
    const [viaGateway, viaBare] = await Promise.all(
      [stack.gatewayUrl, bare.url].map((base) => answer(base, s, key)),
    );
    if (!isDeepStrictEqual(viaGateway, viaBare)) {
      const [g, b] = [viaGateway, viaBare].map((a) => JSON.stringify(a));
      let at = 0;
      while (at < g.length && g[at] === b[at]) at++;
      const near = (text) => text.slice(Math.max(0, at - 120), at + 120);
      throw new Error(
        `${s.name}: the bare baseline answers differently, from character ${at}\ngateway: …${near(g)}…\nbare:    …${near(b)}…`,
      );
    }
  }

  const redisPid = await redisServerPid(env.REDIS_URL);
  const backends = async (apps) =>
    (
      await server`select pid from pg_stat_activity where split_part(application_name, ':', 1) = any(${apps})`
    ).map((r) => r.pid);
  const groupsNow = async () => {
    const [stackPg, barePg] = await Promise.all([
      backends(["crm", "timeline", "gateway"].map((name) => `funil_${opts.funilEnv}_${name}`)),
      backends(["bench_bare"]),
    ]);
    return {
      gateway: () => [stack.pid("gateway")],
      crm: () => [stack.pid("crm")],
      timeline: () => [stack.pid("timeline")],
      postgres: () => stackPg,
      redis: () => (redisPid ? [redisPid] : []),
      bare: () => [bare.pid],
      "postgres (bare)": () => barePg,
      "load generator": () => [process.pid],
    };
  };
  const target = (s, through) => ({
    url: `${through === "bare" ? bare.url : stack.gatewayUrl}/api/v1${s.path}`,
    method: s.method,
    body: s.body,
    idempotent: s.idempotent,
    key,
  });
  /** The gateway's RPC calls and the sends that carried them (batches, or streams of single calls), from its /metrics. */
  const rpcCounts = async () => {
    const text = await (await fetch(`${stack.gatewayUrl}/metrics`)).text();
    const count = (name) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
    return {
      calls: count("funil_rpc_client_calls_total"),
      sends: count("funil_rpc_client_batches_total") || count("funil_rpc_client_streams_total"),
    };
  };
  const run = async (s, through, load) => {
    const before = through === "gateway" ? await rpcCounts() : undefined;
    const m = await measure({
      ...target(s, through),
      seconds: opts.seconds,
      groups: await groupsNow(),
      ...load,
    });
    if (before) {
      const after = await rpcCounts();
      // How many calls the batching put in one stream on average (1 = none batched).
      m.callsPerStream = (after.calls - before.calls) / Math.max(1, after.sends - before.sends);
    }
    return m;
  };

  const results = { paired: [], openLoop: [], alone: [] };
  const total =
    paired.reduce(
      (n, s) => n + (s.once ? 1 : opts.connections.length) * 2 + (s.once || !opts.openLoop ? 0 : 2),
      0,
    ) *
      opts.runs +
    alone.length * opts.runs;
  let done = 0;
  const step = (what) => progress(`${++done}/${total} ${what}`);

  for (const s of paired) {
    for (const through of ["gateway", "bare"])
      await measure({ ...target(s, through), seconds: 1, connections: 8, groups: {} });
    for (const connections of s.once ? [opts.connections[0]] : opts.connections) {
      const runs = { gateway: [], bare: [] };
      for (let r = 0; r < opts.runs; r++)
        // Alternating which goes first spreads the machine's drift over both.
        for (const through of r % 2 ? ["bare", "gateway"] : ["gateway", "bare"]) {
          runs[through].push(await run(s, through, { connections }));
          const m = runs[through].at(-1);
          step(
            `${s.name} · ${connections} conns · ${through}: ${Math.round(m.rps)} req/s, p99 ${m.p99.toFixed(1)} ms${failures(m)}`,
          );
        }
      results.paired.push({
        name: s.name,
        connections,
        gateway: median(runs.gateway),
        bare: median(runs.bare),
      });
    }
  }
  // Open loop: a fixed arrival rate, half of what the bare route tops out at; 32 connections so that the
  // rate, not the connection count, is the limit.
  for (const s of paired.filter((p) => !p.once && opts.openLoop)) {
    const top = Math.max(...results.paired.filter((p) => p.name === s.name).map((p) => p.bare.rps));
    const rate = Math.round(top / 2);
    const runs = { gateway: [], bare: [] };
    for (let r = 0; r < opts.runs; r++)
      for (const through of r % 2 ? ["bare", "gateway"] : ["gateway", "bare"]) {
        runs[through].push(await run(s, through, { connections: 32, rate }));
        const m = runs[through].at(-1);
        step(
          `${s.name} · open loop ${rate} req/s · ${through}: ${Math.round(m.rps)} req/s, p99 ${m.p99.toFixed(1)} ms${failures(m)}`,
        );
      }
    results.openLoop.push({ name: s.name, rate, gateway: median(runs.gateway), bare: median(runs.bare) });
  }
  for (const s of alone) {
    const runs = [];
    for (let r = 0; r < opts.runs; r++) {
      runs.push(await run(s, "gateway", { connections: opts.connections[0] }));
      step(`${s.name}: ${Math.round(runs.at(-1).rps)} req/s`);
    }
    results.alone.push({ name: s.name, connections: opts.connections[0], gateway: median(runs) });
  }

  // One line per paired read route for bench/all.mjs' summary, in bench/compare.mjs' shape.
  if (process.env.BENCH_SUMMARY)
    for (const name of new Set(results.paired.filter((p) => p.name.startsWith("GET")).map((p) => p.name)))
      appendFileSync(
        process.env.BENCH_SUMMARY,
        `${JSON.stringify({
          service: "crm",
          name,
          closed: results.paired.filter((p) => p.name === name),
          open: results.openLoop.find((o) => o.name === name),
        })}\n`,
      );
  const [{ version: pgVersion }] = await server`select current_setting('server_version') as version`;
  const page = renderResults({
    results,
    machine: {
      cores: os.availableParallelism(),
      cpu: os.cpus()[0]?.model ?? "unknown CPU",
      node: process.version,
      postgres: pgVersion,
      autovacuum: data.autovacuum,
    },
    opts: { ...opts, full: FULL },
    fill: data,
  });
  const file = new URL("./RESULTS.md", import.meta.url);
  writeFileSync(file, `${page}${handWritten(file)}`);
  console.log(page);
  progress(`wrote bench/RESULTS.md in ${Math.round((Date.now() - started) / 1000)} s`);
} finally {
  bare?.stop();
  await stack.stop();
  await server.end();
}
if (profileDir) printProfiles(profileDir);

/** What a request answers (status and parsed body), to compare the gateway's with the baseline's. */
async function answer(base, s, key) {
  const res = await fetch(`${base}/api/v1${s.path}`, {
    method: s.method ?? "GET",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: s.body,
  });
  return { status: res.status, body: await res.json() };
}

/** The cursor of the page that starts `depth` rows into the contact list. */
async function cursorAt(get, depth) {
  let cursor = null;
  for (let seen = 0; seen < depth; seen += 500)
    cursor = (await get(`/contacts?limit=500${cursor ? `&cursor=${cursor}` : ""}`)).nextCursor;
  return cursor;
}

async function redisServerPid(url) {
  const redis = new Redis(url ?? "redis://127.0.0.1:6379", { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return Number(/process_id:(\d+)/.exec(await redis.info("server"))?.[1]) || undefined;
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

/** Starts bare.mjs as its own process; resolves once it prints the port it listens on. */
function startBare(extraEnv) {
  // The same heap budget as every process of the stack (scripts/stack.mjs).
  const heap = heapFlags(env);
  const bareMain = new URL("./bare.mjs", import.meta.url).pathname;
  const child = spawn(process.execPath, [...heap, ...opts.nodeArgs, bareMain], {
    env: { ...process.env, CURSOR_KEYS: env.CURSOR_KEYS, ...extraEnv },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`bench/bare.mjs exited with code ${code}`)));
    readline
      .createInterface({ input: child.stdout })
      .once("line", (port) =>
        resolve({ url: `http://127.0.0.1:${port}`, pid: child.pid, stop: () => child.kill("SIGTERM") }),
      );
  });
}

/** The hand-written part of RESULTS.md (from "## What each lever was worth" on), kept across runs. */
function handWritten(file) {
  try {
    const text = readFileSync(file, "utf8");
    const at = text.indexOf("\n## What each lever was worth");
    return at >= 0 ? text.slice(at) : "";
  } catch {
    return "";
  }
}

function printProfiles(dir) {
  for (const name of PROFILED) {
    for (const file of profilesIn(path.join(dir, name))) {
      console.log(`\n${name}: top self time (${file})`);
      const line = ({ name: fn, ms, share }) =>
        console.log(
          `${(share * 100).toFixed(1).padStart(5)} %  ${Math.round(ms).toString().padStart(6)} ms  ${fn}`,
        );
      topSelfTime(file, 20).forEach(line);
      console.log(`\n${name}: by package (Node internals counted for their caller)`);
      byPackage(file).forEach(line);
    }
  }
}
