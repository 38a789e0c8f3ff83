import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { checkEqual, compare, compareTable, cpuProfiled, protocol, startBare } from "./compare.mjs";
import { backendsOf, pidsNamed } from "./procstat.mjs";

const ENV = process.env.BENCH_ENV ?? "bench_hookreads";
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1200);
const DEALS = Math.round((CONTACTS * 2) / 3);
const CLOSED = Math.round(CONTACTS / 3);
const CHANGED = Math.round(CONTACTS / 3);
const WORKSPACES = 20;
const KEYS_PER_WORKSPACE = 3;
/** Writes in flight while filling. */
const IN_FLIGHT = 16;
const FILL_LIMIT_MS = 120_000;
const started = Date.now();
const log = (msg) =>
  process.stderr.write(`[bench:webhooks-reads] ${((Date.now() - started) / 1000).toFixed(1)} s: ${msg}\n`);

const env = {
  ...process.env,
  FUNIL_ENV: ENV,
  LOG_LEVEL: "warn",
  RATE_LIMIT_MAX: "100000000",
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  // A failing delivery is attempted three times within a second, then dead: the fill ends with no retry
  // left to run while the reads are measured.
  WEBHOOK_RETRY_SCHEDULE_MS: "200,500",
  // One cursor key for the stack and the bare route, so that both sign a next cursor alike.
  CURSOR_KEYS: randomBytes(32).toString("base64url"),
};
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
const SERVER = env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbUrl = (name) => Object.assign(new URL(SERVER), { pathname: `/${name}` }).toString();
const STREAM_PREFIX = `${ENV.toUpperCase()}_`;

await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL, log });
const server = postgres(SERVER, { max: 2, onnotice: () => {} });
const nc = await connect({ servers: env.NATS_URL ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);

/** Drops the env's databases and NATS streams (before the run: the last one's; after it: its own). */
async function dropEnv() {
  const like = `funil\\_${ENV.replaceAll("_", "\\_")}\\_%`;
  for (const { datname } of await server`select datname from pg_database where datname like ${like}`)
    await server.unsafe(`drop database if exists "${datname}" with (force)`);
  const streams = [];
  for await (const s of jsm.streams.list())
    if (s.config.name.startsWith(STREAM_PREFIX)) streams.push(s.config.name);
  for (const name of streams) await jsm.streams.delete(name);
}
await dropEnv();

/**
 * The receiver, in this process (it only works while the bench fills): /ok/<n> answers 200, /fail/<n>
 * 500, /flaky/<n> 500 at every 4th POST of its path and 200 otherwise.
 */
const seen = {};
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    seen[req.url] = (seen[req.url] ?? 0) + 1;
    const fails = req.url.startsWith("/fail/") || (req.url.startsWith("/flaky/") && seen[req.url] % 4 === 0);
    if (fails)
      res
        .writeHead(500, { "content-type": "application/json" })
        .end('{"error":"the bench receiver refuses"}');
    else res.writeHead(200, { "content-type": "text/plain" }).end("ok");
  });
});
receiver.keepAliveTimeout = 60_000;
receiver.listen(0, "127.0.0.1");
await once(receiver, "listening");
const receiverUrl = `http://127.0.0.1:${receiver.address().port}`;

const stack = await startStack({
  env,
  port: 0,
  stdio: process.env.BENCH_LOG ?? "ignore",
  nodeArgs: cpuProfiled(["gateway", "webhooks"]),
});
const base = stack.gatewayUrl;
log("stack up");
const hooks = postgres(dbUrl(`funil_${ENV}_webhooks`), { max: 1, onnotice: () => {} });
let bare;

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
  return res.json();
}

/** fn(0..count-1), `IN_FLIGHT` at a time. */
async function inParallel(count, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(IN_FLIGHT, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

const CONTACT_EVENTS = ["contact.created", "contact.updated"];
const DEAL_EVENTS = [
  "opportunity.created",
  "opportunity.stage_changed",
  "opportunity.won",
  "opportunity.lost",
];
const CLOSED_EVENTS = ["opportunity.won", "opportunity.lost"];
const OK_EVENTS = [["contact.created"], ["opportunity.created"], CLOSED_EVENTS, ["contact.updated"]];

/** The 30 subscriptions: 0 flaky to every contact and deal event, 1-5 failing, 6-29 answering 200. */
function subscriptionsOf() {
  return Array.from({ length: 30 }, (_, i) => {
    const [path, events] =
      i === 0
        ? [`/flaky/${i}`, [...CONTACT_EVENTS, ...DEAL_EVENTS]]
        : i <= 5
          ? [`/fail/${i}`, CLOSED_EVENTS]
          : [`/ok/${i}`, OK_EVENTS[i % OK_EVENTS.length]];
    return {
      url: `${receiverUrl}${path}`,
      events,
      ...(i % 3 === 0 && { description: `bench subscription ${i}` }),
    };
  });
}

/** The workspaces and their keys (the first is the one the reads measure); the first key is the bench's. */
async function workspacesAndKeys() {
  const scopes = [
    [
      "contacts.read",
      "contacts.write",
      "opportunities.read",
      "opportunities.write",
      "webhooks.manage",
      "audit.read",
    ],
    ["contacts.read", "opportunities.read"],
    ["audit.read"],
  ];
  const made = [];
  for (let w = 0; w < WORKSPACES; w++) {
    const ws = await call("POST", "/admin/v1/workspaces", {
      name: `bench hookreads ${w}`,
      operator: w === 19,
    });
    const secrets = [];
    for (let k = 0; k < KEYS_PER_WORKSPACE; k++)
      secrets.push(
        (await call("POST", `/admin/v1/workspaces/${ws.id}/keys`, { name: `key ${k}`, scopes: scopes[k] }))
          .secret,
      );
    made.push({ ws, key: secrets[0] });
  }
  return made[0];
}

/** The writes whose events fill the log, the deliveries and the attempts; how many of each type. */
async function writes(ws, key) {
  const pipe = await call("POST", `/admin/v1/workspaces/${ws.id}/pipelines`, {
    name: "Vendas",
    stages: [{ name: "Novo" }, { name: "Proposta" }],
  });
  const contacts = [];
  await inParallel(CONTACTS, async (i) => {
    const phone = `+55 11 9${String(i).padStart(4, "0")}-${String(i * 7)
      .padStart(4, "0")
      .slice(-4)}`;
    contacts[i] = (
      await call("POST", "/api/v1/contacts", { name: `Contato ${i}`, phone, tags: ["lead"] }, key)
    ).id;
  });
  log(`${CONTACTS} contacts`);
  const deals = [];
  await inParallel(DEALS, async (i) => {
    const deal = { contactId: contacts[i], pipelineId: pipe.id, title: `Negócio ${i}` };
    deals[i] = (await call("POST", "/api/v1/opportunities", deal, key)).id;
  });
  log(`${DEALS} deals`);
  await inParallel(CLOSED, async (i) => {
    const change = i % 2 ? { status: "lost", lossReason: "preço" } : { status: "won" };
    await call("PATCH", `/api/v1/opportunities/${deals[i]}`, change, key);
  });
  await inParallel(CHANGED, async (i) => {
    await call("PATCH", `/api/v1/contacts/${contacts[CONTACTS - 1 - i]}`, { company: `Empresa ${i}` }, key);
  });
  log(`${CLOSED} deals won or lost, ${CHANGED} contacts changed`);
  return {
    "contact.created": CONTACTS,
    "opportunity.created": DEALS,
    "opportunity.won": Math.ceil(CLOSED / 2),
    "opportunity.lost": Math.floor(CLOSED / 2),
    "contact.updated": CHANGED,
  };
}

/** Waits until the log holds every event written and every delivery of them is over; its counts. */
async function settled(ws, written, subscriptions) {
  const events = Object.values(written).reduce((a, b) => a + b, 0);
  const expected = subscriptions.reduce(
    (n, s) => n + s.events.reduce((m, type) => m + (written[type] ?? 0), 0),
    0,
  );
  const waitFrom = Date.now();
  for (let last = 0; ; ) {
    const [c] = await hooks`
      select (select count(*)::int from event_log where workspace_id = ${ws.id} and type = any(${Object.keys(written)})) as logged,
        (select count(*)::int from deliveries) as deliveries,
        (select count(*)::int from deliveries where status = 'pending') as pending,
        (select count(*)::int from attempts) as attempts`;
    if (c.logged >= events && c.deliveries >= expected && c.pending === 0) return { ...c, expected };
    if (Date.now() - waitFrom > FILL_LIMIT_MS)
      throw new Error(
        `not settled after ${FILL_LIMIT_MS} ms: ${c.logged}/${events} events logged, ${c.deliveries}/${expected} deliveries, ${c.pending} pending`,
      );
    if (Date.now() - last > 2000) {
      last = Date.now();
      log(
        `waiting: ${c.logged}/${events} events logged, ${c.deliveries}/${expected} deliveries, ${c.pending} pending`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The bare baseline (bench/webhooks-reads-bare.mjs) on this run's databases. */
const startHooksBare = () =>
  startBare("./webhooks-reads-bare.mjs", {
    BARE_WEBHOOKS_DB: dbUrl(`funil_${ENV}_webhooks`),
    BARE_GATEWAY_DB: dbUrl(`funil_${ENV}_gateway`),
    BARE_ADMIN_TOKEN: stack.adminToken,
    CURSOR_KEYS: env.CURSOR_KEYS,
  });

/** PostgreSQL backends of the given application names. */
const backends = (apps) => backendsOf(server, apps);

/** Each route through the gateway and through the bare route, alternating on the same data. */
async function measureRoutes(key, sub) {
  bare = await startHooksBare();
  const nats = pidsNamed("nats-server");
  const pgOf = { gateway: [], bare: [] };
  const sidesOf = (service, withNats) => ({
    gateway: {
      url: base,
      groups: () => ({
        gateway: () => [stack.pid("gateway")],
        ...(service === "webhooks" && { webhooks: () => [stack.pid("webhooks")] }),
        ...(withNats && { nats: () => nats }),
        postgres: () => pgOf.gateway,
      }),
    },
    bare: { url: bare.url, groups: () => ({ bare: () => [bare.pid], postgres: () => pgOf.bare }) },
  });
  const admin = stack.adminToken;
  const scenarios = [
    ["webhooks", "GET /webhooks (30 subscriptions)", "/api/v1/webhooks", key],
    ["webhooks", "GET /webhooks/{id}", `/api/v1/webhooks/${sub}`, key],
    ["webhooks", "GET /webhooks/{id}/deliveries (50 most recent)", `/api/v1/webhooks/${sub}/deliveries`, key],
    ["webhooks", "GET /webhooks/{id}/attempts (page 1, limit 100)", `/api/v1/webhooks/${sub}/attempts`, key],
    ["webhooks", "GET /events (page 1, limit 100)", "/api/v1/events", key, true],
    ["webhooks", "GET /audit (page 1, limit 100)", "/api/v1/audit", key, true],
    ["webhooks", "GET /webhooks/event-types (the catalog)", "/api/v1/webhooks/event-types", key],
    ["gateway", `GET /admin/v1/workspaces (${WORKSPACES} workspaces)`, "/admin/v1/workspaces", admin],
  ];
  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
  const rows = [];
  for (const [service, name, path, token, withNats] of scenarios.filter(([, n]) => !only || only.test(n))) {
    await checkEqual(name, base, bare.url, path, token);
    const prepare = async () => {
      pgOf.gateway = await backends(
        service === "webhooks" ? [`funil_${ENV}_webhooks`, `funil_${ENV}_gateway`] : [`funil_${ENV}_gateway`],
      );
      pgOf.bare = await backends(["bench_hookreads_bare"]);
    };
    const sides = sidesOf(service, withNats);
    rows.push(await compare({ service, name, path, key: token, sides, prepare, log }));
  }
  return rows;
}

try {
  const fillStarted = Date.now();
  const { ws, key } = await workspacesAndKeys();
  log(`${WORKSPACES} workspaces with ${KEYS_PER_WORKSPACE} keys each`);
  const subscriptions = subscriptionsOf();
  const ids = [];
  for (const s of subscriptions) ids.push((await call("POST", "/api/v1/webhooks", s, key)).subscription.id);
  log(`${subscriptions.length} subscriptions`);
  const written = await writes(ws, key);
  const counts = await settled(ws, written, subscriptions);
  // Only what the reads go through runs while they are measured: the gateway and webhooks.
  for (const name of ["crm", "scheduling", "timeline", "learning"]) await stack.stopOne(name);
  await hooks`vacuum analyze`;
  const [{ logged }] = await hooks`select count(*)::int as logged from event_log`;
  const [{ flaky }] = await hooks`
    select count(*)::int as flaky from attempts where subscription_id = ${ids[0]}`;
  const fillSeconds = (Date.now() - fillStarted) / 1000;
  log(
    `filled in ${fillSeconds.toFixed(1)} s: ${logged} events logged, ${counts.deliveries} deliveries, ${counts.attempts} attempts`,
  );

  const rows = await measureRoutes(key, ids[0]);
  const cpu = os.cpus();
  const table = [
    `## ${new Date().toISOString()}`,
    "",
    `${os.availableParallelism()} cores (${cpu[0]?.model ?? "unknown CPU"}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${process.platform} ${os.release()}, Node ${process.version}, load average ${os.loadavg()[0].toFixed(1)} at the end. Filled through the public API in ${fillSeconds.toFixed(1)} s: ${WORKSPACES} workspaces with ${KEYS_PER_WORKSPACE} keys each; in the first, 30 subscriptions (1 flaky: every 4th POST answers 500; 5 always 500; 24 answer 200; retries after 200 and 500 ms), ${CONTACTS} contacts, ${DEALS} deals, ${CLOSED} won or lost, ${CHANGED} contacts changed: ${logged} events logged, ${counts.deliveries} deliveries, ${counts.attempts} attempts (${flaky} of the flaky subscription, the one read by id). Then crm, scheduling, timeline and learning stopped, VACUUM ANALYZE.`,
    "",
    `Median of ${protocol.runs} runs of ${protocol.seconds} s per row, the gateway and the bare route (bench/webhooks-reads-bare.mjs: plain statements in one Fastify process, columns mapped by hand, one pool of 10 per database) alternating on the same data; ratio = gateway req/s ÷ bare req/s. CPU = µs per request per process from /proc (postgres: each side's backends; nats: the server, which GET /events and /audit ask for the log's ack floor).`,
    "",
    ...compareTable(rows),
    "",
  ].join("\n");
  const resultsFile = new URL("./RESULTS-webhooks-reads.md", import.meta.url);
  if (!existsSync(resultsFile))
    writeFileSync(resultsFile, "# Webhooks reads bench results (npm run bench:webhooks-reads)\n\n");
  appendFileSync(resultsFile, `${table}\n`);
  process.stdout.write(`${table}\n`);
} finally {
  await bare?.stop();
  await hooks.end();
  await stack.stop();
  receiver.closeAllConnections();
  receiver.close();
  await dropEnv();
  await nc.close();
  await server.end();
}
