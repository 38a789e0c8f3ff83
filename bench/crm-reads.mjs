import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import os from "node:os";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { checkEqual, compare, compareTable, cpuProfiled, protocol, startBare } from "./compare.mjs";
import { apiClient, parallel as parallelCalls } from "./fill.mjs";
import { backendsOf } from "./procstat.mjs";

const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 50);
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 2000);
const DEALS = Number(process.env.BENCH_DEALS ?? 1000);
const TASKS = Number(process.env.BENCH_TASKS ?? 5000);
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
const ENV = process.env.BENCH_ENV ?? "bench_crmreads";
const log = (msg) => process.stderr.write(`[bench:crm-reads] ${msg}\n`);

const env = {
  ...process.env,
  FUNIL_ENV: ENV,
  LOG_LEVEL: "warn",
  RATE_LIMIT_MAX: "100000000",
  // One cursor key for the stack and the bare route, so that both sign a next cursor alike.
  CURSOR_KEYS: randomBytes(32).toString("base64url"),
};
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
const serverUrl = env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbUrl = (name) => Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();
await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
const server = postgres(serverUrl, { max: 2, onnotice: () => {} });
const nc = await connect({ servers: env.NATS_URL ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);

/** The databases and streams of ENV: a run starts without the last one's and leaves none behind. */
async function dropAll() {
  for (const {
    datname,
  } of await server`select datname from pg_database where datname like ${`funil\\_${ENV}\\_%`}`)
    await server.unsafe(`drop database if exists "${datname}" with (force)`);
  for await (const s of jsm.streams.list())
    if (s.config.name.startsWith(`${ENV.toUpperCase()}_`)) await jsm.streams.delete(s.config.name);
}
await dropAll();

const stack = await startStack({ env, port: 0, stdio: "ignore", nodeArgs: cpuProfiled(["gateway", "crm"]) });
const base = stack.gatewayUrl;
const call = apiClient(base, stack.adminToken);
let bare;

/** Runs `one(i)` for i < count with 16 clients (fill.mjs); logs and returns the seconds it took. */
async function parallel(what, count, one) {
  const seconds = await parallelCalls(count, one, () => {});
  log(`${what}: ${count} in ${seconds.toFixed(1)} s`);
  return seconds;
}

/** PostgreSQL backends of the given application names. */
const backends = (apps) => backendsOf(server, apps);

/** The bare baseline (bench/crm-reads-bare.mjs) on this run's databases. */
const startCrmBare = () =>
  startBare("./crm-reads-bare.mjs", {
    BARE_CRM_DB: dbUrl(`funil_${ENV}_crm`),
    BARE_GATEWAY_DB: dbUrl(`funil_${ENV}_gateway`),
    CURSOR_KEYS: env.CURSOR_KEYS,
  });

/** The workspace's definitions through the admin API: members, pipelines, custom fields. */
async function definitions(ws) {
  const admin = (path, body) => call("POST", `/admin/v1/workspaces/${ws.id}${path}`, body);
  const roles = ["owner", "operador", "atendente", "visualizador"];
  const members = [];
  await parallel("members", MEMBERS, async (i) => {
    members[i] = await admin("/members", {
      name: `Membro ${i} Conceição`,
      email: `membro${i}@bench.io`,
      role: roles[i % roles.length],
      active: i % 10 !== 9,
    });
  });
  const pipelines = [];
  for (const [p, stages] of [4, 5, 6].entries())
    pipelines.push(
      await admin("/pipelines", {
        name: `Funil ${p}`,
        stages: Array.from({ length: stages }, (_, s) => ({ name: `Etapa ${p}.${s}` })),
      }),
    );
  const types = ["text", "number", "boolean", "date", "select"];
  for (let f = 0; f < 20; f++) {
    const type = types[f % types.length];
    await admin("/custom-fields", {
      entity: f < 12 ? "contact" : "opportunity",
      fieldKey: `campo_${f}`,
      label: `Campo ${f}`,
      type,
      ...(type === "select" ? { options: ["a", "b", `c${f}`] } : {}),
    });
  }
  return { members, pipelines };
}

/** Contacts, deals (some closed, some trashed) and tasks (some completed) through the public API. */
async function records(key, members, pipelines) {
  const contactIds = [];
  const seconds = {};
  seconds.contacts = await parallel("contacts", CONTACTS, async (i) => {
    const c = await call(
      "POST",
      "/api/v1/contacts",
      { name: `Contato ${i}`, phone: `+55 11 9${String(i).padStart(8, "0")}`, email: `c${i}@bench.io` },
      key,
    );
    contactIds[i] = c.id;
  });
  const dealIds = [];
  seconds.deals = await parallel("deals", DEALS, async (i) => {
    const pipeline = pipelines[i % pipelines.length];
    const deal = await call(
      "POST",
      "/api/v1/opportunities",
      {
        contactId: contactIds[i % CONTACTS],
        pipelineId: pipeline.id,
        stageId: pipeline.stages[i % pipeline.stages.length].id,
        title: `Negócio ${i}`,
        valueCents: 1000 * (i % 97),
      },
      key,
    );
    if (i % 4 === 3)
      await call("PATCH", `/api/v1/opportunities/${deal.id}`, { status: i % 8 === 3 ? "won" : "lost" }, key);
    if (i % 25 === 24) await call("DELETE", `/api/v1/opportunities/${deal.id}`, undefined, key);
    else dealIds.push(deal.id);
  });
  const assignees = members.filter((m) => m.active);
  seconds.tasks = await parallel("tasks", TASKS, async (i) => {
    const about =
      i % 5 === 0 ? { opportunityId: dealIds[i % dealIds.length] } : { contactId: contactIds[i % CONTACTS] };
    const task = await call(
      "POST",
      "/api/v1/tasks",
      {
        title: `Tarefa ${i}`,
        ...about,
        ...(i % 3 === 0 ? { body: `Ligar de volta (${i})` } : {}),
        ...(i % 13 === 0 ? {} : { assigneeUserId: assignees[i % assignees.length].id }),
        ...(i % 2 === 0 ? { dueAt: new Date(Date.UTC(2026, 0, 1 + (i % 365), 12)).toISOString() } : {}),
      },
      key,
    );
    if (i % 5 === 1) await call("PATCH", `/api/v1/tasks/${task.id}`, { completed: true }, key);
  });
  return seconds;
}

try {
  const started = Date.now();
  const ws = await call("POST", "/admin/v1/workspaces", { name: "bench crm reads" });
  const { secret: key } = await call("POST", `/admin/v1/workspaces/${ws.id}/keys`, {
    name: "bench",
    scopes: [
      "contacts.read",
      "contacts.write",
      "opportunities.read",
      "opportunities.write",
      "tasks.read",
      "tasks.write",
      "members.read",
    ],
  });
  const { members, pipelines } = await definitions(ws);
  const seconds = await records(key, members, pipelines);
  const crm = postgres(dbUrl(`funil_${ENV}_crm`), { max: 1, onnotice: () => {} });
  const [{ autovacuum }] = await crm`select current_setting('autovacuum') as autovacuum`;
  await crm`vacuum analyze`;
  await crm.end();
  const fillSeconds = (Date.now() - started) / 1000;
  log(`filled in ${fillSeconds.toFixed(1)} s`);

  // The assignee of the filtered page: an active member with a full page and more.
  const assignee = members.find((m) => m.active && m !== members[0]);
  const scenarios = [
    ["GET /tasks (page 1, default limit 50)", "/api/v1/tasks"],
    ["GET /tasks?assigneeUserId=… (page 1, default limit 50)", `/api/v1/tasks?assigneeUserId=${assignee.id}`],
    [`GET /members (whole list, ${MEMBERS})`, "/api/v1/members"],
    ["GET /pipelines (whole list, 3 with 15 stages)", "/api/v1/pipelines"],
    ["GET /custom-fields?entity=contact (whole list, 12 of 20)", "/api/v1/custom-fields?entity=contact"],
    [`GET /funnel (all time, ${DEALS} deals)`, "/api/v1/funnel"],
  ].filter(([name]) => !ONLY || ONLY.test(name));

  bare = await startCrmBare();
  const pgOf = { gateway: [], bare: [] };
  const sides = {
    gateway: {
      url: base,
      groups: () => ({
        gateway: () => [stack.pid("gateway")],
        crm: () => [stack.pid("crm")],
        postgres: () => pgOf.gateway,
      }),
    },
    bare: { url: bare.url, groups: () => ({ bare: () => [bare.pid], postgres: () => pgOf.bare }) },
  };
  const prepare = async () => {
    pgOf.gateway = await backends([`funil_${ENV}_crm`, `funil_${ENV}_gateway`]);
    pgOf.bare = await backends(["bench_crmreads_bare"]);
  };
  const rows = [];
  const sizes = [];
  for (const [name, path] of scenarios) {
    await checkEqual(name, base, bare.url, path, key);
    const body = await fetch(base + path, { headers: { authorization: `Bearer ${key}` } });
    sizes.push(`${name.split(" (")[0]} ${((await body.arrayBuffer()).byteLength / 1024).toFixed(1)} KiB`);
    rows.push(await compare({ service: "crm", name, path, key, sides, prepare, log }));
  }

  const table = [
    `## ${new Date().toISOString()}`,
    "",
    `${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "unknown CPU"}) · Node ${process.version} · load average ${os.loadavg()[0].toFixed(1)} at the end. One workspace filled through the API with 16 clients in ${fillSeconds.toFixed(1)} s: ${MEMBERS} members, 3 pipelines (15 stages), 20 custom fields, ${CONTACTS} contacts (${Math.round(CONTACTS / seconds.contacts)}/s), ${DEALS} deals (${Math.round(DEALS / seconds.deals)}/s with their PATCHes and DELETEs), ${TASKS} tasks (${Math.round(TASKS / seconds.tasks)}/s with their PATCHes); then VACUUM ANALYZE (autovacuum ${autovacuum}).`,
    "",
    `Median of ${protocol.runs} runs of ${protocol.seconds} s per row, the gateway and the bare route (bench/crm-reads-bare.mjs: each page's plain statements in one Fastify process, columns mapped by hand, one pool of 10) alternating on the same data; ratio = gateway req/s ÷ bare req/s. CPU = µs per request per process (postgres: each side's backends); latencies in ms.`,
    "",
    ...compareTable(rows),
    "",
    `Body sizes through the gateway: ${sizes.join(", ")}.`,
    "",
  ].join("\n");
  const resultsFile = new URL("./RESULTS-crm-reads.md", import.meta.url);
  if (!existsSync(resultsFile))
    writeFileSync(
      resultsFile,
      "# crm's other read routes against their bare route (npm run bench:crm-reads)\n\n",
    );
  appendFileSync(resultsFile, `${table}\n`);
  process.stdout.write(`${table}\n`);
} finally {
  await bare?.stop();
  await stack.stop();
  await dropAll();
  await nc.close();
  await server.end();
}
