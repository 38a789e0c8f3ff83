// Webhook delivery benchmark (`npm run bench:webhooks`, issue 11 §8): one webhooks process sends to a fast
// local receiver across 20 subscriptions, measured against a raw undici POST loop to the same receiver in
// the same run; then 5 of the 20 receivers hang until the timeout and the 15 fast ones are measured
// again. Events are published straight onto the EVENTS stream, so the numbers are the webhooks process's:
// fan-out, queueing, the key check at the gateway's Auth, signing, sending and recording. Bounded in
// count and time; progress on stderr; results appended to bench/RESULTS-webhooks.md.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, readFileSync } from "node:fs";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { Agent, request } from "undici";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 400); // per phase; × 20 subscriptions = deliveries
const BASELINE = Number(process.env.BENCH_BASELINE_REQUESTS ?? 8000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PHASE_LIMIT_MS = 120_000;
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
await server.end();
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
  stdio: "ignore",
  nodeArgs: (name) => (name === "webhooks" ? NODE_ARGS : []),
});

async function call(method, path, body, key) {
  const res = await fetch(`${stack.gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key ?? stack.adminToken}`, "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** CPU time (µs) and RSS (MB) of a process, from /proc. */
function usage(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  const ticks = Number(stat[11]) + Number(stat[12]); // utime + stime, in clock ticks (100 per second)
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
  return { cpuUs: ticks * 10_000, rssMb: rss };
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

/** The baseline: the same POSTs (size, keep-alive, concurrency bound) straight from undici. */
async function baseline() {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < BASELINE) {
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
  await agent.close();
  return BASELINE / ((performance.now() - started) / 1000);
}

/** One phase: 20 subscriptions (`hanging` of them on /hang/), EVENTS events; the fast deliveries/s. */
async function phase(name, hanging) {
  const ws = await call("POST", "/admin/v1/workspaces", { name });
  const { secret: key } = await call("POST", `/admin/v1/workspaces/${ws.id}/keys`, {
    name: "bench",
    scopes: ["webhooks.manage", "contacts.read"],
  });
  const fastPaths = [];
  for (let i = 0; i < 20; i++) {
    const path = i < hanging ? `/hang/${name}-${i}` : `/fast/${name}-${i}`;
    if (i >= hanging) fastPaths.push(path);
    await call(
      "POST",
      "/api/v1/webhooks",
      { url: `${receiverUrl}${path}`, events: ["contact.created"] },
      key,
    );
  }
  const expected = EVENTS * fastPaths.length;
  const js = jetstream(nc);
  const pid = stack.pid("webhooks");
  const before = usage(pid);
  const started = performance.now();
  for (let i = 0; i < EVENTS; i++) {
    const id = `evt_${randomUUID()}`;
    const envelope = {
      id,
      type: "contact.created",
      workspaceId: ws.id,
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
  let delivered = 0;
  let lastReport = 0;
  while (delivered < expected) {
    if (performance.now() - started > PHASE_LIMIT_MS)
      throw new Error(`${name}: ${delivered}/${expected} after ${PHASE_LIMIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 100));
    const counts = await stats();
    delivered = fastPaths.reduce((n, p) => n + (counts[p] ?? 0), 0);
    if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      log(`${name}: ${delivered}/${expected} fast deliveries`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const after = usage(pid);
  return {
    rate: expected / seconds,
    cpuUsPerDelivery: (after.cpuUs - before.cpuUs) / expected,
    rssMb: after.rssMb,
    seconds,
  };
}

try {
  log(`baseline: ${BASELINE} raw undici POSTs, ${CONCURRENCY} at a time`);
  const raw = await baseline();
  log(`baseline: ${raw.toFixed(0)} POST/s`);
  const fast = await phase("fast", 0);
  log(`20 fast receivers: ${fast.rate.toFixed(0)} deliveries/s`);
  const mixed = await phase("mixed", 5);
  log(`15 fast + 5 hanging: ${mixed.rate.toFixed(0)} fast deliveries/s`);
  const ratio = fast.rate / raw;
  const kept = mixed.rate / fast.rate;
  const date = new Date().toISOString().slice(0, 16).replace("T", " ");
  const lines = [
    "",
    `### ${date} UTC, ${EVENTS} events per phase, ${process.platform}, ${(await import("node:os")).cpus().length} cores`,
    "",
    "| scenario | per second | vs baseline | webhooks CPU µs per delivery | webhooks RSS MB |",
    "|---|---|---|---|---|",
    `| raw undici POST loop (${CONCURRENCY} in flight) | ${raw.toFixed(0)} | 1.00 | | |`,
    `| 20 fast receivers | ${fast.rate.toFixed(0)} | ${ratio.toFixed(2)} | ${fast.cpuUsPerDelivery.toFixed(0)} | ${fast.rssMb.toFixed(0)} |`,
    `| 15 fast + 5 hanging (fast ones) | ${mixed.rate.toFixed(0)} | ${(mixed.rate / raw).toFixed(2)} | ${mixed.cpuUsPerDelivery.toFixed(0)} | ${mixed.rssMb.toFixed(0)} |`,
    "",
    `Fast receivers keep ${(kept * 100).toFixed(0)} % of their rate while 5 hang (goal ≥ 80 %); webhooks/baseline ${ratio.toFixed(2)} (goal ≥ 0.5); ${fast.rate >= 500 ? "≥" : "<"} 500 deliveries/s.`,
  ];
  appendFileSync(new URL("./RESULTS-webhooks.md", import.meta.url), `${lines.join("\n")}\n`);
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  await stack.stop();
  receiver.kill();
  await nc.close();
}
