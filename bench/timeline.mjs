// Timeline benchmark (`npm run bench:timeline`, issue 10 §7): its own stack (FUNIL_ENV=bench_timeline),
// BENCH_INTERACTIONS interactions of one workspace loaded in bulk with COPY (default 500 000; the issue's
// full size is BENCH_INTERACTIONS=5000000), then GET /interactions by contactId, by userId + channel, page 1
// against a page 10 000 deep, and the two composed single reads, each against a baseline measured in the
// same run (GET /members: the cheapest route through gateway → service → database). Then the ingest
// throughput of one timeline process draining a backlog of BENCH_INGEST messages (default 100 000; the
// issue's is 1 000 000). Prints progress; appends the results to bench/RESULTS-timeline.md.
import { appendFileSync } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import autocannon from "autocannon";
import postgres from "postgres";
import { encodeCursor } from "../packages/rpc/dist/cursor.js";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { cpuSeconds, rssMb } from "./procstat.mjs";

const ROWS = Number(process.env.BENCH_INTERACTIONS ?? 500_000);
const BACKLOG = Number(process.env.BENCH_INGEST ?? 100_000);
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const CONTACTS = Math.max(1, Math.floor(ROWS / 100));
const USERS = 50;
const CHANNELS = ["whatsapp", "instagram", "facebook", "phone", "call", "email", "note"];
const ENV = "bench_timeline";
const log = (msg) => process.stderr.write(`[bench:timeline] ${msg}\n`);

const env = { ...process.env, FUNIL_ENV: ENV, LOG_LEVEL: "warn", RATE_LIMIT_MAX: "100000000" };
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
const serverUrl = env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
{
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  for (const {
    datname,
  } of await admin`select datname from pg_database where datname like ${`funil\\_${ENV}\\_%`}`)
    await admin.unsafe(`drop database if exists "${datname}" with (force)`);
  await admin.end();
}
const nc = await connect({ servers: env.NATS_URL ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);
for (const s of ["INGEST", "EVENTS"]) await jsm.streams.delete(`${ENV.toUpperCase()}_${s}`).catch(() => {});

const stack = await startStack({ env, port: 0, stdio: "ignore" });
const base = stack.gatewayUrl;
const db = postgres(`${serverUrl.replace(/\/[^/]*$/, "")}/funil_${ENV}_timeline`, {
  max: 2,
  onnotice: () => {},
});

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
const PROCESSES = ["gateway", "crm", "timeline"];

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
  let started = Date.now();
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

  // A cursor 10 000 pages deep (limit 20), built from the row there as the service would have issued it.
  const LIMIT = 20;
  const depth = Math.min(10_000 * LIMIT, ROWS - LIMIT);
  const [at] = await db`
    select created_at, id from interactions where workspace_id = ${ws.id}
    order by created_at desc, id desc offset ${depth - 1} limit 1`;
  const deep = encodeCursor("interactions", { workspaceId: ws.id }, [at.created_at.toISOString(), at.id]);

  const scenarios = [
    ["baseline: GET /members", "/api/v1/members"],
    [`GET /interactions (page 1, limit ${LIMIT})`, `/api/v1/interactions?limit=${LIMIT}`],
    [
      `GET /interactions (page ${depth / LIMIT + 1}, limit ${LIMIT})`,
      `/api/v1/interactions?limit=${LIMIT}&cursor=${deep}`,
    ],
    ["GET /interactions?contactId=…", `/api/v1/interactions?contactId=${contact.id}`],
    [
      "GET /interactions?userId=…&channel=whatsapp,call",
      "/api/v1/interactions?userId=u8&channel=whatsapp,call",
    ],
    ["GET /contacts/{id} (crm + timeline)", `/api/v1/contacts/${contact.id}`],
    ["GET /opportunities/{id} (crm + timeline)", `/api/v1/opportunities/${deal.id}`],
  ];
  const rows = [];
  for (const [name, path] of scenarios) {
    await call("GET", path, undefined, key); // fails loudly on a non-2xx
    const before = Object.fromEntries(PROCESSES.map((p) => [p, usage(stack.pid(p))]));
    const r = await autocannon({
      url: `${base}${path}`,
      connections: CONNECTIONS,
      duration: DURATION,
      headers: { authorization: `Bearer ${key}` },
    });
    const cpu = PROCESSES.map((p) => {
      const after = usage(stack.pid(p));
      return `${p} ${Math.round((after.cpuUs - before[p].cpuUs) / r.requests.total)}`;
    });
    rows.push({
      name,
      rps: r.requests.average,
      p50: r.latency.p50,
      p99: r.latency.p99,
      non2xx: r.non2xx,
      cpu: cpu.join(", "),
    });
    log(`${name}: p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms`);
  }
  const baseline = rows[0];

  // Ingest: the timeline stopped while a backlog is published, then the time it takes to drain it.
  log(`publishing a backlog of ${BACKLOG} messages…`);
  const timelinePid = stack.pid("timeline");
  process.kill(timelinePid, "SIGSTOP");
  const js = jetstream(nc);
  const subject = `${ENV}.ingest.inbox.message`;
  for (let i = 0; i < BACKLOG; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(BACKLOG, i + 1000); j++)
      batch.push(
        js.publish(
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
        ),
      );
    await Promise.all(batch);
  }
  const cpuBefore = usage(timelinePid);
  started = Date.now();
  process.kill(timelinePid, "SIGCONT");
  const pending = async () => {
    const info = await jsm.consumers.info(`${ENV.toUpperCase()}_INGEST`, "timeline-inbox");
    return info.num_pending + info.num_ack_pending;
  };
  for (let last = Date.now(); (await pending()) > 0; ) {
    await new Promise((r) => setTimeout(r, 500));
    if (Date.now() - last > 5000) {
      log(`ingest: ${await pending()} left`);
      last = Date.now();
    }
  }
  const ingestSeconds = (Date.now() - started) / 1000;
  const ingestCpu = usage(timelinePid);
  const [{ stored }] = await db`select count(*)::int as stored from interactions where id like 'msg:in%'`;
  const perSecond = Math.round(BACKLOG / ingestSeconds);
  log(`ingest: ${BACKLOG} in ${ingestSeconds.toFixed(1)} s (${perSecond}/s), ${stored} stored`);

  const rss = PROCESSES.map((p) => `${p} ${usage(stack.pid(p)).rssMiB.toFixed(0)} MiB`).join(", ");
  const [{ autovacuum }] = await db`select current_setting('autovacuum') as autovacuum`;
  const table = [
    `## ${new Date().toISOString()}`,
    "",
    `${ROWS} interactions in one workspace (${CONTACTS} contacts, ${USERS} users) loaded by COPY in ${loadSeconds.toFixed(1)} s, then VACUUM ANALYZE (autovacuum ${autovacuum}).`,
    `${CONNECTIONS} connections, ${DURATION} s per row, gateway + crm + timeline + PostgreSQL + Redis + NATS on one ${process.platform} machine. Ratio = p50 / the baseline's p50. CPU = µs per request per process.`,
    "",
    "| scenario | req/s | p50 ms | p99 ms | ratio | non-2xx | CPU µs/request |",
    "|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${(r.p50 / baseline.p50).toFixed(2)} | ${r.non2xx} | ${r.cpu} |`,
    ),
    "",
    `Ingest: one timeline process drained a backlog of ${BACKLOG} inbox messages in ${ingestSeconds.toFixed(1)} s: **${perSecond} messages/s**, ${Math.round((ingestCpu.cpuUs - cpuBefore.cpuUs) / BACKLOG)} µs CPU per message; ${stored} stored.`,
    `RSS at the end: ${rss}.`,
    "",
  ].join("\n");
  appendFileSync(new URL("./RESULTS-timeline.md", import.meta.url), `${table}\n`);
  process.stdout.write(`${table}\n`);
} finally {
  await db.end();
  await nc.close();
  await stack.stop();
}
