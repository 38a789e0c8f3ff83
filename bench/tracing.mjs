// What tracing costs (`npm run bench:tracing`, docs/operations.md §What it costs): the main reads and the contact upsert through the
// gateway in a build without tracing (@funil/telemetry replaced by a no-op, bench/noop-telemetry), with
// tracing off (no OTLP endpoint: the SDK is not even loaded), and on with parent-based sampling at 0 %
// (the context propagated, nothing recorded) and 10 %, sending to an OTLP/HTTP receiver in its own process
// that answers every export and keeps nothing (a local collector at its cheapest). One stack per mode on
// the same filled databases, the modes in alternating order round after round; medians of req/s, p99 and
// CPU per request of each process on the path, and the ratios to the build without tracing (the
// machine is shared: CPU per request, read from /proc, is the figure to judge by, not req/s). Prints
// Markdown tables; the dated results live in bench/RESULTS-tracing.md. `npm run bench` runs it at 250 req/s,
// 10 % sampled, and puts its table in bench/RESULTS-summary.md.
//
//   npm run bench:tracing
//   BENCH_SECONDS=3 BENCH_ROUNDS=2 BENCH_CONNECTIONS=16 BENCH_CONTACTS=2000 BENCH_DEALS=500
//   BENCH_TRACING_RATIOS=0,0.1      the sampling ratios of the "on" modes (default 0,0.1)
//   BENCH_RATE=150                  requests per second in all (open loop), the same in every mode, so that
//                                   CPU per request is compared at the same load (default: as fast as it goes)
//   BENCH_ONLY=contacts/{id}        only the scenarios whose name holds this
//   BENCH_WARM_SECONDS=3            seconds at full speed before each measured run (the JIT warmed, as in a
//                                   process that has been serving for a while)
//   BENCH_PROFILE=<dir>             gateway and crm under node --cpu-prof, in <dir>/<mode>/<process>;
//                                   their top functions are printed after the tables
//   BENCH_BEFORE_ROOT=<dir>         a checkout (built) of the code before a change: its off and "on" modes
//                                   run too, interleaved with this one's, on the same databases
//   BENCH_ALS_PROBE=1               one more mode: off, with an AsyncLocalStorage entered at start and
//                                   nothing else (what Node 20's async hooks alone cost)
//   BENCH_MODES='off|on, 10 % sampled'  only the modes so named (as in the table), separated by |
//   BENCH_LOG=<file>                the stacks' log lines go there
//   BENCH_ENV=bench_tracing         the FUNIL_ENV of its databases and streams
import { appendFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { startBare } from "./compare.mjs";
import { apiClient, fill } from "./fill.mjs";
import { measure, median } from "./load.mjs";
import { byPackage, profilesIn, topSelfTime } from "./profile.mjs";

const numberOf = (name, fallback) => Number(process.env[name] ?? fallback);
const opts = {
  seconds: numberOf("BENCH_SECONDS", 3),
  rounds: numberOf("BENCH_ROUNDS", 2),
  connections: numberOf("BENCH_CONNECTIONS", 16),
  contacts: numberOf("BENCH_CONTACTS", 2000),
  deals: numberOf("BENCH_DEALS", 500),
  ratios: (process.env.BENCH_TRACING_RATIOS ?? "0,0.1").split(",").map(Number),
  only: process.env.BENCH_ONLY,
  rate: process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined,
  profile: process.env.BENCH_PROFILE,
  beforeRoot: process.env.BENCH_BEFORE_ROOT,
  alsProbe: process.env.BENCH_ALS_PROBE === "1",
  modes: process.env.BENCH_MODES?.split("|").map((m) => m.trim()),
  warmSeconds: Number(process.env.BENCH_WARM_SECONDS ?? 3),
  funilEnv: process.env.BENCH_ENV ?? "bench_tracing",
};
const started = Date.now();
const progress = (msg) =>
  process.stderr.write(`[bench:tracing ${Math.round((Date.now() - started) / 1000)} s] ${msg}\n`);

/** The OTLP/HTTP receiver (otlp-sink.mjs); its counts are read when it closes. */
async function startSink() {
  const sink = await startBare("./otlp-sink.mjs", {});
  const seen = { exports: 0, bytes: 0 };
  return {
    url: sink.url,
    seen,
    close: async () => {
      Object.assign(seen, await (await fetch(`${sink.url}/stats`)).json());
      await sink.stop();
    },
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
const NOOP = path.join(path.dirname(fileURLToPath(import.meta.url)), "noop-telemetry", "register.mjs");
/** Off and on at each ratio, in the checkout at `root` (this one when undefined), named with `prefix`. */
const tracingModes = (prefix, root) => [
  { name: `${prefix}off`, env: {}, root },
  ...opts.ratios.map((ratio) => ({
    name: `${prefix}on, ${ratio * 100} % sampled`,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: String(ratio),
    },
    root,
  })),
];
/** The modes compared: the build without tracing, off, on at each ratio, and the same before a change. */
const allModes = [
  { name: "no tracing built in", env: {}, nodeArgs: ["--import", NOOP] },
  ...tracingModes("", undefined),
  ...(opts.alsProbe
    ? [
        {
          name: "off, an AsyncLocalStorage entered",
          env: {},
          nodeArgs: ["--import", path.join(path.dirname(NOOP), "als-entered.mjs")],
        },
      ]
    : []),
  ...(opts.beforeRoot ? tracingModes("before: ", opts.beforeRoot) : []),
];
const modes = opts.modes ? allModes.filter((m) => opts.modes.includes(m.name)) : allModes;
if (modes.length === 0)
  throw new Error(`BENCH_MODES names none of: ${allModes.map((m) => m.name).join(" | ")}`);

await ensureInfra({ databaseUrl: base.DATABASE_URL, redisUrl: base.REDIS_URL, natsUrl: base.NATS_URL });
const server = postgres(serverUrl, { max: 1, onnotice: () => {} });
for (const { datname } of await server`
  select datname from pg_database where datname like ${`funil\\_${opts.funilEnv}\\_%`}`)
  await server.unsafe(`drop database if exists "${datname}" with (force)`);

/** The processes whose CPU is read; the first two are profiled under BENCH_PROFILE. */
const PROCESSES = ["gateway", "crm", "timeline", "webhooks"];
const PROFILED = ["gateway", "crm"];
const slug = (mode) => mode.name.replace(/[^a-z0-9]+/gi, "-");
const start = (mode, profiled) =>
  startStack({
    env: { ...base, ...mode.env },
    root: mode.root,
    port: 0,
    stdio: process.env.BENCH_LOG ?? "ignore",
    log: () => {},
    nodeArgs: (name) => [
      ...(mode.nodeArgs ?? []),
      ...(profiled && opts.profile && PROFILED.includes(name)
        ? ["--cpu-prof", `--cpu-prof-dir=${path.join(opts.profile, slug(mode), name)}`]
        : []),
    ],
  });
/** A stack in `mode`, tried again when a process is not ready in time (a shared machine under load). */
async function launch(mode, profiled = true) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(mode, profiled);
    } catch (err) {
      if (attempt === 3) throw err;
      progress(`${mode.name}: ${err.message.split("\n")[0]}; starting it again`);
    }
  }
}
// The fill's stack is never profiled: the profiles show the measured requests only.
let stack = await launch(allModes[1], false);
let scenarios = [];
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
  scenarios = [
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
  ].filter((s) => !opts.only || s.name.includes(opts.only));
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
          rate: opts.rate,
        };
        let m;
        // A run with errors (a loaded machine's timeouts) is measured again, twice at most.
        for (let attempt = 1; !m || m.errors; attempt++) {
          if (m && attempt > 3) throw new Error(`${s.name} (${mode.name}): ${JSON.stringify(m.errorKinds)}`);
          if (m) progress(`${s.name} (${mode.name}): ${JSON.stringify(m.errorKinds)}; again`);
          // Warm at full speed first: at a fixed rate alone the JIT is still optimizing through the measured
          // seconds (the processes' CPU per second falls for 10 s and more at 250 req/s), and the mode with
          // more code to optimize would pay its warm-up in the figures.
          await measure({
            ...target,
            rate: undefined,
            seconds: opts.warmSeconds,
            connections: opts.connections,
            groups: {},
          });
          m = await measure({ ...target, seconds: opts.seconds, connections: opts.connections, groups });
        }
        const runs = results.get(mode.name);
        runs.set(s.name, [...(runs.get(s.name) ?? []), m]);
        progress(`${s.name} · ${mode.name}: ${Math.round(m.rps)} req/s, p99 ${m.p99.toFixed(1)} ms`);
      }
    }
  }
} finally {
  await stack.stop();
  await server.end();
  await sink.close();
}
const table = render(scenarios.map((s) => s.name));
console.log(table);
// bench/all.mjs puts the table in bench/RESULTS-summary.md.
if (process.env.BENCH_SUMMARY)
  appendFileSync(process.env.BENCH_SUMMARY, `${JSON.stringify({ tracing: table })}\n`);
if (opts.profile) printProfiles();

/**
 * The Markdown table: per scenario and mode, medians of req/s, p99 and CPU per request of each process
 * and of all of them, each mode's CPU as a ratio to the build without tracing, and each "on" mode's to off.
 */
function render(names) {
  const total = (m) => PROCESSES.reduce((sum, p) => sum + (m.cpuUs[p] ?? 0), 0);
  const lines = [
    `${new Date().toISOString().slice(0, 10)} · ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "?"}) · ` +
      `node ${process.version} · load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")} at the end · ` +
      `${opts.rounds} rounds × ${opts.seconds} s per mode and scenario, ` +
      `${opts.connections} connections${opts.rate ? ` at ${opts.rate} req/s` : ""} · ${sink.seen.exports} OTLP exports (${Math.round(sink.seen.bytes / 1024)} KB) received`,
    "",
    `| scenario | tracing | req/s | p99 ms | ${PROCESSES.map((p) => `${p} µs/req`).join(" | ")} | all µs/req | CPU vs ${modes[0].name} | CPU vs off, round by round |`,
    `|---|---|---:|---:|${PROCESSES.map(() => "---:|").join("")}---:|---:|---:|`,
  ];
  for (const name of names) {
    const runsOf = (modeName) => results.get(modeName)?.get(name);
    const reference = runsOf(modes[0].name) && median(runsOf(modes[0].name));
    for (const mode of modes) {
      const runs = runsOf(mode.name);
      if (!runs) continue;
      const m = median(runs);
      const toReference = mode === modes[0] || !reference ? "" : (total(m) / total(reference)).toFixed(3);
      // "on" against the off of its own checkout: the goal of docs/operations.md §What it costs.
      const offRuns = mode.name.includes("on, ") ? runsOf(mode.name.replace(/on, .*/, "off")) : undefined;
      lines.push(
        `| ${name} | ${mode.name} | ${Math.round(m.rps)} | ${m.p99.toFixed(1)} | ` +
          `${PROCESSES.map((p) => Math.round(m.cpuUs[p] ?? 0)).join(" | ")} | ${Math.round(total(m))} | ${toReference} | ${roundByRound(runs, offRuns, total)} |`,
      );
    }
  }
  return lines.join("\n");
}

/**
 * The ratio of CPU per request to off, round by round (each round's "on" to the same round's "off", which
 * ran beside it): their median and range. The machine drifts between rounds by more than tracing's cost,
 * and a ratio of the pair cancels what both of a round saw.
 */
function roundByRound(runs, offRuns, total) {
  if (!offRuns) return "";
  const ratios = runs
    .map((r, i) => offRuns[i] && total(r) / total(offRuns[i]))
    .filter(Boolean)
    .sort((a, b) => a - b);
  if (ratios.length === 0) return "";
  const half = ratios.length >> 1;
  const mid = (ratios.length % 2 ? ratios[half] : (ratios[half - 1] + ratios[half]) / 2).toFixed(2);
  return ratios.length === 1 ? mid : `${mid} (${ratios[0].toFixed(2)}-${ratios.at(-1).toFixed(2)})`;
}

/** The profiled processes' top functions and packages by self time, mode by mode. */
function printProfiles() {
  const line = ({ name, ms, share }) =>
    console.log(
      `${(share * 100).toFixed(1).padStart(5)} %  ${Math.round(ms).toString().padStart(6)} ms  ${name}`,
    );
  for (const mode of modes)
    for (const name of PROFILED)
      for (const file of profilesIn(path.join(opts.profile, slug(mode), name))) {
        console.log(`\n${mode.name} · ${name}: top self time (${file})`);
        topSelfTime(file, 25).forEach(line);
        console.log(`\n${mode.name} · ${name}: by package`);
        byPackage(file, 15).forEach(line);
      }
}
