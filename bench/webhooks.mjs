// Webhook delivery benchmark (`npm run bench:webhooks`, docs/benchmarks.md): one webhooks process sends to a fast
// local receiver across 20 subscriptions, measured against a raw undici POST loop to the same receiver in
// the same run; then 5 of the 20 receivers hang until the timeout and the 15 fast ones are measured
// again. Events are published straight onto the EVENTS stream (64 publishes in flight), so the numbers
// are the webhooks process's: fan-out, queueing, the key check at the gateway's Auth, signing, sending and recording. Only the gateway
// and webhooks run (the other services are stopped once the stack is up), and each run's baseline is
// taken half before and half after its 20 fast receivers' phase.
// After a warm-up (not reported), BENCH_RUNS runs of the three measurements, each run's ratios taken
// within the run, and the median of every column reported, with the CPU per request of the webhooks
// process, the gateway (its Auth answers the key checks), PostgreSQL, NATS, the receiver and the baseline's client (from
// /proc), and the webhooks process's RSS. A phase that cannot finish within PHASE_LIMIT_MS is reported
// as such, not waited for. Progress on stderr; results appended to bench/RESULTS-webhooks.md.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { Agent, request } from "undici";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { cpuSeconds, pidsNamed, watch } from "./procstat.mjs";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000); // per phase; × 20 subscriptions = deliveries
const BASELINE = Number(process.env.BENCH_BASELINE_REQUESTS ?? 40000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PUBLISH_IN_FLIGHT = Number(process.env.BENCH_PUBLISH_IN_FLIGHT ?? 64);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
// BENCH_TRACE=1: every ~200 ms of a phase, its deliveries so far, the host's idle CPU and the webhooks
// process's and its PostgreSQL backends' share of a core (where a phase waits, and on what).
const TRACE = process.env.BENCH_TRACE === "1";
const PHASE_LIMIT_MS = Number(process.env.BENCH_PHASE_LIMIT_MS ?? 120_000);
const ENV = process.env.BENCH_ENV ?? "benchhooks";
// Extra node flags for the webhooks process only (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);

const env = {
  ...process.env,
  FUNIL_ENV: ENV,
  LOG_LEVEL: "warn",
  RATE_LIMIT_MAX: "100000000",
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
};
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
const log = (msg) => process.stderr.write(`[bench:webhooks] ${msg}\n`);

await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
// A clean slate: the last run's databases and streams (with its hanging deliveries' retries) go.
const server = postgres(env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", {
  max: 1,
  onnotice() {},
});
for (const {
  datname,
} of await server`select datname from pg_database where datname like ${`funil\\_${ENV}\\_%`}`)
  await server.unsafe(`drop database if exists "${datname}" with (force)`);
const nc = await connect({ servers: env.NATS_URL ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);
for await (const s of jsm.streams.list())
  if (s.config.name.startsWith(`${ENV.toUpperCase()}_`)) await jsm.streams.delete(s.config.name);

const receiver = spawn(process.execPath, [new URL("./webhook-receiver.mjs", import.meta.url).pathname], {
  stdio: ["ignore", "pipe", "inherit"],
});
const receiverUrl = await new Promise((resolve) =>
  receiver.stdout.once("data", (d) => resolve(`http://127.0.0.1:${String(d).trim()}`)),
);
const stats = async () => (await fetch(`${receiverUrl}/stats`)).json();
const stack = await startStack({
  env,
  port: 0,
  // BENCH_LOG=<file>: the stack's output (warnings and errors) goes there instead of nowhere.
  stdio: process.env.BENCH_LOG ?? "ignore",
  nodeArgs: (name) => (name === "webhooks" ? NODE_ARGS : []),
});
// Only what a delivery goes through runs while it is measured: the gateway (its Auth answers the key
// checks) and webhooks. The other services would otherwise take their share of the 2 cores for work of
// their own (timeline's consumer of EVENTS records every event the phases publish), which the raw loop
// never competes with.
for (const name of ["crm", "scheduling", "timeline", "learning"]) await stack.stopOne(name);

async function call(method, path, body, key) {
  const res = await fetch(`${stack.gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key ?? stack.adminToken}`, "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

const body = JSON.stringify({
  id: "evt_bench",
  type: "contact.created",
  createdAt: new Date().toISOString(),
  workspaceId: "ws_bench",
  data: {
    id: "ct_bench",
    name: "Maria Souza",
    phone: "+55 11 98888-7777",
    email: "maria@example.com",
    tags: ["lead"],
  },
});

const median = (xs) => {
  const sorted = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
// The webhooks database's backends (found again at each phase) and the NATS server: what a delivery
// costs the infrastructure, beside the webhooks process itself.
let webhooksPg = [];
const natsPids = pidsNamed("nats-server");
const pids = {
  webhooks: () => [stack.pid("webhooks")].filter(Boolean),
  postgres: () => webhooksPg,
  nats: () => natsPids,
  gateway: () => [stack.pid("gateway")].filter(Boolean),
  receiver: () => [receiver.pid],
  client: () => [process.pid],
};

/** The host's idle and total CPU seconds so far (all cores), from /proc/stat. */
function hostCpu() {
  const ticks = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: ticks[3] + ticks[4], total: ticks.reduce((a, b) => a + b, 0) };
}

/** BENCH_TRACE's lines: what happened since the last one, at most one every ~200 ms. */
function tracer(started) {
  const sum = (ps) => ps.reduce((n, pid) => n + (cpuSeconds(pid) ?? 0), 0);
  let last = {
    at: performance.now(),
    host: hostCpu(),
    webhooks: sum(pids.webhooks()),
    pg: sum(pids.postgres()),
  };
  return {
    sample(what) {
      const at = performance.now();
      if (at - last.at < 200) return;
      const now = { at, host: hostCpu(), webhooks: sum(pids.webhooks()), pg: sum(pids.postgres()) };
      const seconds = (now.at - last.at) / 1000;
      const idle = (100 * (now.host.idle - last.host.idle)) / (now.host.total - last.host.total);
      const core = (cpu) => Math.round((100 * cpu) / seconds);
      log(
        `${what} at ${Math.round(at - started)} ms: host idle ${Math.round(idle)} %, ` +
          `webhooks ${core(now.webhooks - last.webhooks)} %, PostgreSQL ${core(now.pg - last.pg)} % of a core`,
      );
      last = now;
    },
  };
}

/** The baseline: the same POSTs (size, keep-alive, concurrency bound) straight from undici. */
async function baseline(requests) {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  let next = 0;
  const w = watch(pids);
  w.start();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests) {
        const i = next++;
        const res = await request(`${receiverUrl}/base/${i % 20}`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json", "x-funil-signature": "t=0,v1=0" },
          dispatcher: agent,
        });
        await res.body.dump();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = w.stop();
  await agent.close();
  return {
    requests,
    seconds,
    rate: requests / seconds,
    clientUs: (cpu.client.cpu * 1e6) / requests,
    receiverUs: (cpu.receiver.cpu * 1e6) / requests,
  };
}

/** Two baseline measurements taken as one: their requests over their time, their CPU per request averaged. */
const together = (a, b) => ({
  rate: (a.requests + b.requests) / (a.seconds + b.seconds),
  clientUs: (a.clientUs * a.requests + b.clientUs * b.requests) / (a.requests + b.requests),
  receiverUs: (a.receiverUs * a.requests + b.receiverUs * b.requests) / (a.requests + b.requests),
});

/**
 * One phase: 20 subscriptions (`hanging` of them on /hang/), `events` events; the fast deliveries/s.
 * Its subscriptions are deleted at the end (their pending retries with them), and the next phase
 * starts once the receiver holds no hanging request any more.
 */
async function phase(name, hanging, events) {
  const { ws, key, fastPaths, subscriptions } = await subscribe(name, hanging);
  const expected = events * fastPaths.length;
  webhooksPg = (
    await server`select pid from pg_stat_activity where split_part(application_name, ':', 1) = ${`funil_${ENV}_webhooks`}`
  ).map((r) => r.pid);
  const js = jetstream(nc);
  const w = watch(pids);
  w.start();
  const started = performance.now();
  const trace = tracer(started);
  await publish(js, ws.id, events);
  if (TRACE) log(`${name}: ${events} events published in ${Math.round(performance.now() - started)} ms`);
  const { delivered, finished } = await deliveredOf(name, fastPaths, expected, started, trace);
  const seconds = (performance.now() - started) / 1000;
  const cpu = w.stop();
  await unsubscribe(subscriptions, key);
  return {
    finished,
    delivered,
    expected,
    rate: delivered / seconds,
    webhooksUs: (cpu.webhooks.cpu * 1e6) / delivered,
    gatewayUs: (cpu.gateway.cpu * 1e6) / delivered,
    postgresUs: (cpu.postgres.cpu * 1e6) / delivered,
    natsUs: (cpu.nats.cpu * 1e6) / delivered,
    receiverUs: (cpu.receiver.cpu * 1e6) / delivered,
    rssMb: cpu.webhooks.rss,
  };
}

/** A phase's workspace, key and 20 subscriptions, the first `hanging` of them on /hang/. */
async function subscribe(name, hanging) {
  const ws = await call("POST", "/admin/v1/workspaces", { name });
  const { secret: key } = await call("POST", `/admin/v1/workspaces/${ws.id}/keys`, {
    name: "bench",
    scopes: ["webhooks.manage", "contacts.read"],
  });
  const fastPaths = [];
  const subscriptions = [];
  for (let i = 0; i < 20; i++) {
    const path = i < hanging ? `/hang/${name}-${i}` : `/fast/${name}-${i}`;
    if (i >= hanging) fastPaths.push(path);
    const { subscription } = await call(
      "POST",
      "/api/v1/webhooks",
      { url: `${receiverUrl}${path}`, events: ["contact.created"] },
      key,
    );
    subscriptions.push(subscription.id);
  }
  return { ws, key, fastPaths, subscriptions };
}

/**
 * The events go out as an outbox relay sends a backlog: up to PUBLISH_IN_FLIGHT publishes awaiting
 * their acknowledgement at once (one at a time, the bench's own round trips held the first second of
 * every phase to ~2 500 events/s while the webhooks process sat partly idle).
 */
async function publish(js, workspaceId, events) {
  let published = 0;
  await Promise.all(
    Array.from({ length: PUBLISH_IN_FLIGHT }, async () => {
      while (published < events) {
        const i = published++;
        const id = `evt_${randomUUID()}`;
        const envelope = {
          id,
          type: "contact.created",
          workspaceId,
          occurredAt: new Date().toISOString(),
          data: {
            id: `ct_${i}`,
            name: `Contact ${i}`,
            phone: "+55 11 98888-7777",
            email: `c${i}@example.com`,
            tags: ["lead"],
          },
        };
        await js.publish(`${ENV}.events.contact.created`, JSON.stringify(envelope), { msgID: id });
      }
    }),
  );
}

/** Waits until the fast subscriptions received every event, or PHASE_LIMIT_MS passed. */
async function deliveredOf(name, fastPaths, expected, started, trace) {
  let delivered = 0;
  let lastReport = 0;
  let finished = true;
  while (delivered < expected) {
    if (performance.now() - started > PHASE_LIMIT_MS) {
      finished = false;
      log(`${name}: ${delivered}/${expected} after ${PHASE_LIMIT_MS} ms: reported as not finished`);
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
    const { counts } = await stats();
    delivered = fastPaths.reduce((n, p) => n + (counts[p] ?? 0), 0);
    if (TRACE) trace.sample(`${name}: ${delivered}/${expected} fast deliveries`);
    else if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      log(`${name}: ${delivered}/${expected} fast deliveries`);
    }
  }
  return { delivered, finished };
}

/** Deletes the phase's subscriptions (their pending retries with them) and waits for the hanging ones to go. */
async function unsubscribe(subscriptions, key) {
  for (const id of subscriptions) await call("DELETE", `/api/v1/webhooks/${id}`, undefined, key);
  for (let waited = 0; (await stats()).hanging > 0 && waited < 30_000; waited += 250)
    await new Promise((r) => setTimeout(r, 250));
  // Deleting them deleted their 40 000 deliveries: vacuumed now, not by autovacuum in the next phase.
  const db = postgres(
    (env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres").replace(
      /\/[^/?]*(\?|$)/,
      `/funil_${ENV}_webhooks$1`,
    ),
    { max: 1, onnotice() {} },
  );
  await db`vacuum (analyze) deliveries, job_leases`;
  await db.end();
}

const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : "–");
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "–");
const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)} %` : "–");

try {
  log("warm-up (not reported)");
  await baseline(Math.min(BASELINE, 2000));
  await phase("warmup", 0, Math.max(20, EVENTS >> 2));
  const runs = [];
  for (let r = 1; r <= RUNS; r++) {
    // The baseline runs half before and half after the phase it is compared with: the machine's speed
    // drifts (other tenants), and a baseline taken at one moment only made the ratio swing by ±0.1.
    log(`run ${r}/${RUNS}: baseline, ${BASELINE / 2} raw undici POSTs, ${CONCURRENCY} at a time`);
    const before = await baseline(BASELINE / 2);
    const fast = await phase(`fast${r}`, 0, EVENTS);
    log(`run ${r}: 20 fast receivers ${fast.rate.toFixed(0)} deliveries/s`);
    const after = await baseline(BASELINE / 2);
    const raw = together(before, after);
    log(
      `run ${r}: baseline ${raw.rate.toFixed(0)} POST/s (${before.rate.toFixed(0)} before the phase, ${after.rate.toFixed(0)} after)`,
    );
    const mixed = await phase(`mixed${r}`, 5, EVENTS);
    log(`run ${r}: 15 fast + 5 hanging ${mixed.rate.toFixed(0)} fast deliveries/s`);
    runs.push({ raw, fast, mixed, ratio: fast.rate / raw.rate, kept: mixed.rate / fast.rate });
  }
  const unfinished = runs.flatMap((r, i) =>
    [r.fast, r.mixed].filter((p) => !p.finished).map((p) => `run ${i + 1}: ${p.delivered}/${p.expected}`),
  );
  const row = (label, x) =>
    `| ${label} | ${f0(x.raw.rate)} | ${f0(x.raw.clientUs)} | ${f0(x.raw.receiverUs)} | ${f0(x.fast.rate)} | ${f2(x.ratio)} | ${f0(x.fast.webhooksUs)} | ${f0(x.fast.gatewayUs)} | ${f0(x.fast.postgresUs)} | ${f0(x.fast.natsUs)} | ${f0(x.fast.receiverUs)} | ${f0(x.fast.rssMb)} | ${f0(x.mixed.rate)} | ${pct(x.kept)} | ${f0(x.mixed.webhooksUs)} | ${f0(x.mixed.rssMb)} |`;
  const pick = (f) => median(runs.map(f));
  const med = {
    raw: {
      rate: pick((r) => r.raw.rate),
      clientUs: pick((r) => r.raw.clientUs),
      receiverUs: pick((r) => r.raw.receiverUs),
    },
    fast: {
      rate: pick((r) => r.fast.rate),
      webhooksUs: pick((r) => r.fast.webhooksUs),
      gatewayUs: pick((r) => r.fast.gatewayUs),
      postgresUs: pick((r) => r.fast.postgresUs),
      natsUs: pick((r) => r.fast.natsUs),
      receiverUs: pick((r) => r.fast.receiverUs),
      rssMb: pick((r) => r.fast.rssMb),
    },
    mixed: {
      rate: pick((r) => r.mixed.rate),
      webhooksUs: pick((r) => r.mixed.webhooksUs),
      rssMb: pick((r) => r.mixed.rssMb),
    },
    ratio: pick((r) => r.ratio),
    kept: pick((r) => r.kept),
  };
  const minKept = Math.min(...runs.map((r) => r.kept));
  const maxRss = Math.max(...runs.flatMap((r) => [r.fast.rssMb, r.mixed.rssMb]));
  const load = (await import("node:os")).loadavg()[0];
  const date = new Date().toISOString().slice(0, 16).replace("T", " ");
  const lines = [
    "",
    `### ${date} UTC, ${RUNS} runs of ${EVENTS} events per phase (× 20 subscriptions), baseline ${BASELINE} POSTs at ${CONCURRENCY} in flight (half before, half after the 20-fast phase), gateway and webhooks alone, ${process.platform}, ${cpus().length} cores, load average ${load.toFixed(1)}`,
    "",
    "CPU columns are µs per request (utime + stime from /proc): the baseline's client and the receiver during the raw loop; webhooks, the gateway (Auth), the webhooks database's PostgreSQL backends, the NATS server and the receiver per fast delivery.",
    "",
    "| run | raw POST/s | client CPU | receiver CPU | 20 fast: deliveries/s | vs raw | webhooks CPU | gateway CPU | PostgreSQL CPU | NATS CPU | receiver CPU | webhooks RSS MB | 15 fast + 5 hanging: fast/s | kept | webhooks CPU | webhooks RSS MB |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...runs.map((r, i) => row(String(i + 1), r)),
    row("**median**", med),
    "",
    `Median webhooks/raw ${f2(med.ratio)} (goal ≥ 0.7: ${med.ratio >= 0.7 ? "met" : "not met"}); highest webhooks RSS ${f0(maxRss)} MB (goal < 150: ${maxRss < 150 ? "met" : "not met"}); fast receivers keep ${pct(med.kept)} of their rate while 5 hang, lowest run ${pct(minKept)} (goal ≥ 80 %: ${minKept >= 0.8 ? "met in every run" : med.kept >= 0.8 ? "met by the median, not in every run" : "not met"}); ${med.fast.rate >= 500 ? "≥" : "<"} 500 deliveries/s.${unfinished.length ? ` Not finished within ${PHASE_LIMIT_MS} ms: ${unfinished.join(", ")} (rates are of what was delivered).` : ""}`,
  ];
  appendFileSync(new URL("./RESULTS-webhooks.md", import.meta.url), `${lines.join("\n")}\n`);
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  await stack.stop();
  receiver.kill();
  await nc.close();
  await server.end();
}
