// What tracing costs (`npm run bench:tracing`, docs/operations.md §What it costs): the main reads and the contact upsert through the
// gateway with tracing off (no OTLP endpoint: the SDK is not even loaded), and on with parent-based 10 %
// sampling, sending to an OTLP/HTTP receiver in this process that answers every export and keeps nothing
// (a local collector at its cheapest). One stack per mode on the same filled databases, the modes in
// alternating order round after round; medians of req/s, p99 and CPU per request of every process on the
// path, and the on/off ratios. Prints a Markdown table; the dated results live in bench/RESULTS-tracing.md.
//
//   npm run bench:tracing
//   BENCH_SECONDS=3 BENCH_ROUNDS=2 BENCH_CONNECTIONS=16 BENCH_CONTACTS=2000 BENCH_DEALS=500
//   BENCH_TRACING_RATIOS=0.1,1      the sampling ratios of the "on" modes (default 0.1)
//   BENCH_ENV=bench_tracing         the FUNIL_ENV of its databases and streams
import * as http from "node:http";
import os from "node:os";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { apiClient, fill } from "./fill.mjs";
import { measure, median } from "./load.mjs";

const numberOf = (name, fallback) => Number(process.env[name] ?? fallback);
const opts = {
  seconds: numberOf("BENCH_SECONDS", 3),
  rounds: numberOf("BENCH_ROUNDS", 2),
  connections: numberOf("BENCH_CONNECTIONS", 16),
  contacts: numberOf("BENCH_CONTACTS", 2000),
  deals: numberOf("BENCH_DEALS", 500),
  ratios: (process.env.BENCH_TRACING_RATIOS ?? "0.1").split(",").map(Number),
  funilEnv: process.env.BENCH_ENV ?? "bench_tracing",
};
const started = Date.now();
const progress = (msg) =>
  process.stderr.write(`[bench:tracing ${Math.round((Date.now() - started) / 1000)} s] ${msg}\n`);

/** An OTLP/HTTP endpoint that reads each export whole and answers 200, counting what it was sent. */
async function startSink() {
  const seen = { exports: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on("data", (c) => {
      seen.bytes += c.length;
    });
    req.on("end", () => {
      seen.exports++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const base = { ...process.env, FUNIL_ENV: opts.funilEnv, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
base.RATE_LIMIT_MAX = "1000000000";
for (const name of Object.keys(base))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete base[name];
for (const name of Object.keys(base)) if (name.startsWith("OTEL_")) delete base[name];
delete base.PORT;
const serverUrl = base.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const sink = await startSink();
/** The modes compared: off, then on at each ratio. */
const modes = [
  { name: "off", env: {} },
  ...opts.ratios.map((ratio) => ({
    name: `on, ${ratio * 100} % sampled`,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: String(ratio),
    },
  })),
];

await ensureInfra({ databaseUrl: base.DATABASE_URL, redisUrl: base.REDIS_URL, natsUrl: base.NATS_URL });
const server = postgres(serverUrl, { max: 1, onnotice: () => {} });
for (const { datname } of await server`
  select datname from pg_database where datname like ${`funil\\_${opts.funilEnv}\\_%`}`)
  await server.unsafe(`drop database if exists "${datname}" with (force)`);

const launch = (mode) =>
  startStack({ env: { ...base, ...mode.env }, port: 0, stdio: "ignore", log: () => {} });
let stack = await launch(modes[0]);
const results = new Map(modes.map((m) => [m.name, new Map()]));
try {
  progress(`filling ${opts.contacts} contacts and ${opts.deals} deals`);
  const u = new URL(serverUrl);
  u.pathname = `/funil_${opts.funilEnv}_crm`;
  const data = await fill({
    call: (...args) => apiClient(stack.gatewayUrl, stack.adminToken)(...args),
    contacts: opts.contacts,
    deals: opts.deals,
    crmDatabaseUrl: u.toString(),
    progress,
  });
  const get = (p) => apiClient(stack.gatewayUrl, stack.adminToken)("GET", `/api/v1${p}`, undefined, data.key);
  const one = (await get("/contacts?limit=1")).data[0];
  const aDeal = (await get("/opportunities?limit=1")).data[0];
  const scenarios = [
    { name: "GET /contacts/{id}", path: `/contacts/${one.id}` },
    { name: "GET /opportunities/{id}", path: `/opportunities/${aDeal.id}` },
    { name: "GET /contacts?limit=50", path: "/contacts?limit=50" },
    { name: "GET /opportunities?limit=50", path: "/opportunities?limit=50" },
    {
      name: "POST /contacts (upsert of an existing contact)",
      path: "/contacts",
      method: "POST",
      body: JSON.stringify({ phone: one.phone, tags: ["std"] }),
    },
  ];
  const PROCESSES = ["gateway", "crm", "timeline", "webhooks"];
  for (let round = 0; round < opts.rounds; round++) {
    // Alternating the order spreads the machine's drift over the modes.
    for (const mode of round % 2 ? [...modes].reverse() : modes) {
      await stack.stop();
      progress(`round ${round + 1}/${opts.rounds}: stack with tracing ${mode.name}`);
      stack = await launch(mode);
      const groups = Object.fromEntries(PROCESSES.map((p) => [p, () => [stack.pid(p)]]));
      for (const s of scenarios) {
        const target = {
          url: `${stack.gatewayUrl}/api/v1${s.path}`,
          method: s.method,
          body: s.body,
          key: data.key,
        };
        await measure({ ...target, seconds: 1, connections: opts.connections, groups: {} });
        const m = await measure({ ...target, seconds: opts.seconds, connections: opts.connections, groups });
        if (m.errors) throw new Error(`${s.name} (${mode.name}): ${JSON.stringify(m.errorKinds)}`);
        const runs = results.get(mode.name);
        runs.set(s.name, [...(runs.get(s.name) ?? []), m]);
        progress(`${s.name} · ${mode.name}: ${Math.round(m.rps)} req/s, p99 ${m.p99.toFixed(1)} ms`);
      }
    }
  }
  console.log(
    render(
      scenarios.map((s) => s.name),
      PROCESSES,
    ),
  );
} finally {
  await stack.stop();
  await server.end();
  await sink.close();
}

/** The Markdown table: per scenario and mode, medians, and each "on" mode's ratios to "off". */
function render(names, processes) {
  const cpu = (m) => processes.reduce((sum, p) => sum + (m.cpuUs[p] ?? 0), 0);
  const lines = [
    `${new Date().toISOString().slice(0, 10)} · ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "?"}) · ` +
      `node ${process.version} · ${opts.rounds} rounds × ${opts.seconds} s per mode and scenario, ` +
      `${opts.connections} connections · ${sink.seen.exports} OTLP exports (${Math.round(sink.seen.bytes / 1024)} KB) received`,
    "",
    "| scenario | tracing | req/s | p99 ms | CPU µs/req (gateway+crm+timeline+webhooks) | req/s vs off | CPU vs off |",
    "|---|---|---:|---:|---:|---:|---:|",
  ];
  for (const name of names) {
    const off = median(results.get("off").get(name));
    for (const mode of modes) {
      const m = median(results.get(mode.name).get(name));
      const ratio = (a, b) => (mode.name === "off" ? "" : (a / b).toFixed(3));
      lines.push(
        `| ${name} | ${mode.name} | ${Math.round(m.rps)} | ${m.p99.toFixed(1)} | ${Math.round(cpu(m))} | ` +
          `${ratio(m.rps, off.rps)} | ${ratio(cpu(m), cpu(off))} |`,
      );
    }
  }
  return lines.join("\n");
}
