import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { encodeCursor, useCursorKeys } from "../packages/rpc/dist/cursor.js";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { interactionStore } from "../services/timeline/dist/store/interactions.js";
import { checkEqual, compare, compareTable, cpuProfiled, protocol, startBare } from "./compare.mjs";
import { measure, median } from "./load.mjs";
import { backendsOf, cpuSeconds, rssMb } from "./procstat.mjs";

const ROWS = Number(process.env.BENCH_INTERACTIONS ?? 500_000);
const BACKLOG = Number(process.env.BENCH_INGEST ?? 100_000);
const ONLY = process.env.BENCH_ONLY;
const CONTACTS = Math.max(1, Math.floor(ROWS / 100));
const USERS = 50;
const CHANNELS = ["whatsapp", "instagram", "facebook", "phone", "call", "email", "note"];
const ENV = process.env.BENCH_ENV ?? "bench_timeline";
const log = (msg) => process.stderr.write(`[bench:timeline] ${msg}\n`);

const env = {
  ...process.env,
  FUNIL_ENV: ENV,
  LOG_LEVEL: "warn",
  RATE_LIMIT_MAX: "100000000",
  // One cursor key for the stack and the bare route, so that both sign a next cursor alike.
  CURSOR_KEYS: randomBytes(32).toString("base64url"),
};
// The deep page's cursor is made here, as the stack would sign it.
useCursorKeys([env.CURSOR_KEYS], () => {});
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
const serverUrl = env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbUrl = (name) => Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();
await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
const server = postgres(serverUrl, { max: 2, onnotice: () => {} });
for (const {
  datname,
} of await server`select datname from pg_database where datname like ${`funil\\_${ENV}\\_%`}`)
  await server.unsafe(`drop database if exists "${datname}" with (force)`);
const nc = await connect({ servers: env.NATS_URL ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);
for (const s of ["INGEST", "EVENTS"]) await jsm.streams.delete(`${ENV.toUpperCase()}_${s}`).catch(() => {});

const stack = await startStack({
  env,
  port: 0,
  stdio: "ignore",
  nodeArgs: cpuProfiled(["gateway", "timeline"]),
});
const base = stack.gatewayUrl;
const db = postgres(dbUrl(`funil_${ENV}_timeline`), { max: 2, onnotice: () => {} });
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

/** CPU time (µs) and resident memory (MiB) of a process, from /proc (bench/procstat.mjs). */
const usage = (pid) => ({ cpuUs: (cpuSeconds(pid) ?? 0) * 1e6, rssMiB: rssMb(pid) ?? 0 });
/** PostgreSQL backends of the given application names. */
const backends = (apps) => backendsOf(server, apps);

/** The bare baseline (bench/timeline-bare.mjs) on this run's databases. */
const startTimelineBare = () =>
  startBare("./timeline-bare.mjs", {
    BARE_TIMELINE_DB: dbUrl(`funil_${ENV}_timeline`),
    BARE_GATEWAY_DB: dbUrl(`funil_${ENV}_gateway`),
    CURSOR_KEYS: env.CURSOR_KEYS,
  });

/**
 * The plan of the timeline's own list query (the SQL its store sends, captured through the driver's
 * debug hook) for the given filters and position, run with EXPLAIN ANALYZE.
 */
async function planOf(workspaceId, filters, limit, after) {
  let captured;
  const probe = postgres(dbUrl(`funil_${ENV}_timeline`), {
    max: 1,
    onnotice: () => {},
    debug: (_conn, query, params) => {
      captured = { query, params };
    },
  });
  try {
    await interactionStore(probe).list(workspaceId, filters, limit, after);
    const rows = await probe.unsafe(`explain (analyze, buffers) ${captured.query}`, captured.params);
    return rows.map((r) => r["QUERY PLAN"]);
  } finally {
    await probe.end();
  }
}

const ms = (v) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
const cpuList = (cpuUs) =>
  Object.entries(cpuUs)
    .map(([p, us]) => `${p} ${Math.round(us)}`)
    .join(", ");
const rssList = (rss) =>
  Object.entries(rss)
    .map(([p, mb]) => `${p} ${Math.round(mb)}`)
    .join(", ");

try {
  const ws = await call("POST", "/admin/v1/workspaces", { name: "bench timeline" });
  const { secret: key } = await call("POST", `/admin/v1/workspaces/${ws.id}/keys`, {
    name: "bench",
    scopes: [
      "contacts.read",
      "contacts.write",
      "opportunities.read",
      "opportunities.write",
      "interactions.read",
      "members.read",
    ],
  });
  const contact = await call("POST", "/api/v1/contacts", { name: "Bench", phone: "+55 11 90000-0000" }, key);
  const pipe = await call("POST", `/admin/v1/workspaces/${ws.id}/pipelines`, {
    name: "B",
    stages: [{ name: "A" }],
  });
  const deal = await call(
    "POST",
    "/api/v1/opportunities",
    { contactId: contact.id, pipelineId: pipe.id, title: "D" },
    key,
  );

  // The load: ROWS interactions over CONTACTS contacts (the first is the real one) and USERS users,
  // one a minute back from now, through COPY.
  log(`loading ${ROWS} interactions by COPY…`);
  const started = Date.now();
  const contactOf = (i) => (i % CONTACTS === 0 ? contact.id : `ct_bench_${i % CONTACTS}`);
  const t0 = Date.now() - ROWS * 60_000;
  function* lines() {
    let chunk = "";
    for (let i = 0; i < ROWS; i++) {
      const channel = CHANNELS[i % CHANNELS.length];
      const inbound = i % 3 === 0;
      const user = !inbound && i % 2 === 0 ? `u${i % USERS}` : null;
      const actor = inbound ? "contact" : user ? "user" : "automation";
      chunk += `${ws.id}\tmsg:${i}\tmessage\t${channel}\t${inbound ? "inbound" : "outbound"}\t${actor}\t${user ?? "\\N"}\t${contactOf(i)}\t${new Date(t0 + i * 60_000).toISOString()}\tpreview ${i}\n`;
      if (i % 5000 === 4999) {
        yield chunk;
        chunk = "";
      }
    }
    if (chunk) yield chunk;
  }
  const copy =
    await db`copy interactions (workspace_id, id, kind, channel, direction, actor, user_id, contact_id, created_at, preview) from stdin`.writable();
  await pipeline(Readable.from(lines()), copy);
  await db`
    insert into contact_touches (workspace_id, contact_id, first_at, last_at)
    select workspace_id, contact_id, min(created_at), max(created_at) from interactions where actor = 'user'
    group by workspace_id, contact_id
    on conflict (workspace_id, contact_id) do update set first_at = least(contact_touches.first_at, excluded.first_at),
      last_at = greatest(contact_touches.last_at, excluded.last_at)`;
  await db`vacuum analyze`;
  const loadSeconds = (Date.now() - started) / 1000;
  log(`loaded in ${loadSeconds.toFixed(1)} s`);

  const out = [
    `## ${new Date().toISOString()}`,
    "",
    `${ROWS} interactions in one workspace (${CONTACTS} contacts, ${USERS} users) loaded by COPY in ${loadSeconds.toFixed(1)} s, then VACUUM ANALYZE (autovacuum ${(await db`select current_setting('autovacuum') as a`)[0].a}). Gateway + crm + timeline + the bare baseline + PostgreSQL + Redis + NATS + autocannon on one ${process.platform} machine, load average ${(await import("node:os")).loadavg()[0].toFixed(1)} at the start.`,
    "",
  ];

  if (ONLY !== "ingest") out.push(...(await reads(ws, key, contact, deal)));
  if (ONLY !== "reads") out.push(...(await ingest(ws)));

  const table = out.join("\n");
  appendFileSync(new URL("./RESULTS-timeline.md", import.meta.url), `${table}\n`);
  process.stdout.write(`${table}\n`);
} finally {
  bare?.stop();
  await db.end();
  await server.end();
  await nc.close();
  await stack.stop();
}

/** GET /interactions through the gateway and through the bare baseline, and the composed reads. */
async function reads(ws, key, contact, deal) {
  const scenarios = await listScenarios(ws, contact);
  const out = await plansOf(ws, scenarios);
  const rows = await compareLists(scenarios, key);
  const composed = await composedReads(key, contact, deal);
  out.push(
    `GET /interactions: median of ${protocol.runs} runs of ${protocol.seconds} s per row, the gateway and the bare route (bench/timeline-bare.mjs: the page's one statement in one Fastify process, columns mapped by hand, one pool of 10) alternating on the same data; ratio = gateway req/s ÷ bare req/s. CPU = µs per request per process (postgres: each side's backends).`,
    "",
    ...compareTable(rows),
    "",
    `Page ${scenarios[1].name.split(",")[0].slice(5)} against page 1 through the gateway at ${protocol.connections[0]} connections: p50 ${(rows[1].closed[0].gateway.p50 / rows[0].closed[0].gateway.p50).toFixed(2)}×.`,
    "",
    "| composed read (gateway only) | req/s | p50 / p99 ms | errors | CPU µs/request | RSS MiB |",
    "|---|---|---|---|---|---|",
    ...composed.map(
      ({ name, g }) =>
        `| ${name} | ${Math.round(g.rps)} | ${ms(g.p50)} / ${ms(g.p99)} | ${g.errors} | ${cpuList(g.cpuUs)} | ${rssList(g.rssMb)} |`,
    ),
    "",
  );
  return out;
}

/** The list requests measured: a first page, one 10 000 pages deep, and two filtered ones. */
async function listScenarios(ws, contact) {
  // A cursor 10 000 pages deep (limit 20), built from the row there as the service would have issued it.
  const LIMIT = 20;
  const depth = Math.min(10_000 * LIMIT, ROWS - LIMIT);
  const [at] = await db`
    select created_at, id from interactions where workspace_id = ${ws.id}
    order by created_at desc, id desc offset ${depth - 1} limit 1`;
  const deep = encodeCursor("interactions", { workspaceId: ws.id }, [at.created_at.toISOString(), at.id]);
  const scenarios = [
    {
      name: `page 1, limit ${LIMIT}`,
      path: `/api/v1/interactions?limit=${LIMIT}`,
      filters: {},
      limit: LIMIT,
    },
    {
      name: `page ${depth / LIMIT + 1}, limit ${LIMIT} (keyset)`,
      path: `/api/v1/interactions?limit=${LIMIT}&cursor=${deep}`,
      filters: {},
      limit: LIMIT,
      after: [at.created_at, at.id],
    },
    {
      name: "contactId=… (default limit 100)",
      path: `/api/v1/interactions?contactId=${contact.id}`,
      filters: { contactId: contact.id },
      limit: 100,
    },
    {
      name: "userId=…&channel=whatsapp,call (limit 100)",
      path: "/api/v1/interactions?userId=u8&channel=whatsapp,call",
      filters: { userId: "u8", channels: ["whatsapp", "call"] },
      limit: 100,
    },
  ];
  return scenarios;
}

/** The plans of the scenarios' statements, as lines of the results. */
async function plansOf(ws, scenarios) {
  const out = [];
  log("plans of the list queries…");
  out.push(
    "Plans of the timeline's list queries (its own SQL, EXPLAIN (ANALYZE, BUFFERS), limit + 1 rows):",
    "",
  );
  for (const s of scenarios) {
    const plan = await planOf(ws.id, s.filters, s.limit + 1, s.after);
    out.push(`- ${s.name}:`, "", "```", ...plan, "```", "");
  }
  return out;
}

/** Each scenario through the gateway and through the bare route, alternating on the same data. */
async function compareLists(scenarios, key) {
  bare = await startTimelineBare();
  const pgOf = { gateway: [], bare: [] };
  const sides = {
    gateway: {
      url: base,
      groups: () => ({
        gateway: () => [stack.pid("gateway")],
        timeline: () => [stack.pid("timeline")],
        postgres: () => pgOf.gateway,
      }),
    },
    bare: { url: bare.url, groups: () => ({ bare: () => [bare.pid], postgres: () => pgOf.bare }) },
  };
  const prepare = async () => {
    pgOf.gateway = await backends([`funil_${ENV}_timeline`, `funil_${ENV}_gateway`]);
    pgOf.bare = await backends(["bench_timeline_bare"]);
  };
  const rows = [];
  for (const s of scenarios) {
    await checkEqual(s.name, base, bare.url, s.path, key);
    rows.push(
      await compare({
        service: "timeline",
        name: `GET /interactions ${s.name}`,
        path: s.path,
        key,
        sides,
        prepare,
        log,
      }),
    );
  }
  return rows;
}

/**
 * The composed single reads (crm + timeline in parallel): through the gateway only; their bare
 * baseline is bench/run.mjs'.
 */
async function composedReads(key, contact, deal) {
  const composed = [];
  for (const [name, path] of [
    ["GET /contacts/{id} (crm + timeline)", `/api/v1/contacts/${contact.id}`],
    ["GET /opportunities/{id} (crm + timeline)", `/api/v1/opportunities/${deal.id}`],
  ]) {
    const crmPg = await backends([`funil_${ENV}_crm`, `funil_${ENV}_timeline`, `funil_${ENV}_gateway`]);
    const runs = [];
    for (let r = 0; r < protocol.runs; r++)
      runs.push(
        await measure({
          url: `${base}${path}`,
          key,
          connections: protocol.connections[0],
          seconds: protocol.seconds,
          groups: {
            gateway: () => [stack.pid("gateway")],
            crm: () => [stack.pid("crm")],
            timeline: () => [stack.pid("timeline")],
            postgres: () => crmPg,
          },
        }),
      );
    composed.push({ name, g: median(runs) });
    log(`${name}: p50 ${ms(composed.at(-1).g.p50)} ms`);
  }
  return composed;
}

/** The ingest throughput of one timeline process: stopped while a backlog is published, then drained. */
async function ingest(ws) {
  log(`publishing a backlog of ${BACKLOG} messages…`);
  const timelinePid = stack.pid("timeline");
  process.kill(timelinePid, "SIGSTOP");
  // Plain NATS publishes into the stream (a JetStream publish waits for its ack: a million of them
  // took longer than the drain); the consumer's pending count then says whether all arrived.
  const subject = `${ENV}.ingest.inbox.message`;
  let started = Date.now();
  for (let j = 0; j < BACKLOG; j++) {
    nc.publish(
      subject,
      JSON.stringify({
        workspaceId: ws.id,
        rowId: `in${j}`,
        channel: "whatsapp",
        direction: j % 2 ? "inbound" : "outbound",
        contactId: `ct_ingest_${j % 1000}`,
        conversationId: `cv_${j % 1000}`,
        conversationAssigneeUserId: `u${j % USERS}`,
        channelInstanceId: "inst",
        senderPhone: "+5511900000000",
        sentAt: new Date(Date.now() - j * 1000).toISOString(),
        senderUserId: j % 4 === 0 ? `u${j % USERS}` : undefined,
        preview: `message ${j}`,
      }),
    );
    if (j % 2000 === 1999) await nc.flush();
    if (j % 100_000 === 99_999) log(`published ${j + 1}`);
  }
  await nc.flush();
  const pending = async () => {
    const info = await jsm.consumers.info(`${ENV.toUpperCase()}_INGEST`, "timeline-inbox");
    return info.num_pending + info.num_ack_pending;
  };
  for (let waited = 0; (await pending()) < BACKLOG; waited += 500) {
    if (waited > 30_000) throw new Error(`only ${await pending()} of ${BACKLOG} messages reached the stream`);
    await new Promise((r) => setTimeout(r, 500));
  }
  log(`published in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const pg = await backends([`funil_${ENV}_timeline`]);
  const pgCpu = () => pg.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0) * 1e6;
  const cpuBefore = usage(timelinePid);
  const pgBefore = pgCpu();
  started = Date.now();
  process.kill(timelinePid, "SIGCONT");
  let peakRss = 0;
  for (let last = Date.now(); (await pending()) > 0; ) {
    await new Promise((r) => setTimeout(r, 250));
    peakRss = Math.max(peakRss, usage(timelinePid).rssMiB);
    if (Date.now() - last > 10_000) {
      log(`ingest: ${await pending()} left`);
      last = Date.now();
    }
  }
  const ingestSeconds = (Date.now() - started) / 1000;
  const ingestCpu = usage(timelinePid);
  // The backends the timeline opened while draining count from zero.
  const pgUsed =
    pgCpu() -
    pgBefore +
    (await backends([`funil_${ENV}_timeline`]))
      .filter((p) => !pg.includes(p))
      .reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0) * 1e6, 0);
  const [{ stored }] = await db`select count(*)::int as stored from interactions where id like 'msg:in%'`;
  const perSecond = Math.round(BACKLOG / ingestSeconds);
  log(`ingest: ${BACKLOG} in ${ingestSeconds.toFixed(1)} s (${perSecond}/s), ${stored} stored`);
  return [
    `Ingest: one timeline process drained a backlog of ${BACKLOG} inbox messages (1 000 contacts, a quarter of them human touches, each with its conversation's assignee) in ${ingestSeconds.toFixed(1)} s: **${perSecond} messages/s**; CPU per message: timeline ${Math.round((ingestCpu.cpuUs - cpuBefore.cpuUs) / BACKLOG)} µs, PostgreSQL ${Math.round(pgUsed / BACKLOG)} µs; ${stored} stored; timeline RSS at most ${Math.round(peakRss)} MiB.`,
    "",
  ];
}
