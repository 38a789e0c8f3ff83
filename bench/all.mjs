// `npm run bench`: every service's bench one after the other (crm: run.mjs and crm-reads.mjs, then learning,
// timeline, scheduling, webhooks and webhooks-reads.mjs), each against its own bare route in the same run, then one summary table of
// every read route in bench/RESULTS-summary.md (crm, learning and timeline, bench/compare.mjs' protocol):
// the gateway ÷ bare req/s ratio at 8 and 32 connections, the CPU µs per request of each process (from
// /proc), the highest RSS and the open-loop p99 ratio. The summary says how long each bench took. Each
// bench still appends its own detailed table to its bench/RESULTS*.md.
//   npm run bench                    the default sizes, 3 runs of 5 s per row and the open loop
//   BENCH_QUICK=1 npm run bench      1 run of 2 s per row, no open loop: for iterating on a change
//   BENCH_SERVICES=learning,timeline only those benches
// Every other BENCH_* variable reaches the benches (bench/compare.mjs lists the protocol's). Last, tracing's
// cost (bench/tracing.mjs, off and on at 10 % against a build without tracing) gets a table of its own.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const BENCHES = {
  crm: ["bench/run.mjs"],
  // Tasks, members, pipelines, custom fields and the funnel.
  "crm-reads": ["bench/crm-reads.mjs"],
  learning: ["bench/learning.mjs"],
  // Its reads only: the ingest throughput has no bare route to compare with.
  timeline: ["bench/timeline.mjs", { BENCH_ONLY: "reads" }],
  // Their own protocols (slots and bookings; deliveries against a raw POST loop): rows in their own files.
  scheduling: ["bench/scheduling.mjs"],
  webhooks: ["bench/webhooks.mjs"],
  // Subscriptions, deliveries, attempts, the event log, the audit, the catalog and the admin workspace list.
  "webhooks-reads": ["bench/webhooks-reads.mjs"],
  // The main reads and the upsert without tracing built in, with tracing off and on at 10 % (CPU per request
  // at one rate: docs/operations.md §What it costs).
  tracing: [
    "bench/tracing.mjs",
    {
      BENCH_RATE: "250",
      BENCH_TRACING_RATIOS: "0.1",
      ...(process.env.BENCH_QUICK === "1"
        ? { BENCH_SECONDS: "3", BENCH_ROUNDS: "1" }
        : { BENCH_SECONDS: "10", BENCH_ROUNDS: "2" }),
    },
  ],
};
const chosen = (process.env.BENCH_SERVICES ?? Object.keys(BENCHES).join(",")).split(",");
const summary = path.join(mkdtempSync(path.join(os.tmpdir(), "funil-bench-")), "summary.jsonl");
writeFileSync(summary, "");
const started = Date.now();
const took = {};
for (const name of chosen) {
  const [file, extra] = BENCHES[name] ?? [];
  if (!file) throw new Error(`no bench named ${name} (${Object.keys(BENCHES).join(", ")})`);
  const at = Date.now();
  process.stderr.write(`[bench] ${name}: node ${file}\n`);
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, ...extra, BENCH_SUMMARY: summary },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const [code] = await once(child, "exit");
  if (code !== 0) throw new Error(`${file} exited with code ${code}`);
  took[name] = (Date.now() - at) / 1000;
}

const lines = readFileSync(summary, "utf8")
  .trim()
  .split("\n")
  .filter(Boolean)
  .map((l) => JSON.parse(l));
const results = lines.filter((l) => l.tracing === undefined);
const tracing = lines.find((l) => l.tracing !== undefined)?.tracing;
/** Node processes of a side and their µs/request; PostgreSQL apart (its backends, summed). */
const isPostgres = (k) => k.startsWith("postgres");
const BARE = new Set(["bare", "postgres (bare)"]);
const OTHER = new Set(["redis", "load generator"]);
const cpu = (m, side) => {
  // run.mjs watches every process on both sides (the other side's are idle); compare.mjs one side's.
  const mixed = "postgres (bare)" in m.cpuUs;
  const used = Object.entries(m.cpuUs).filter(
    ([k]) => !OTHER.has(k) && (!mixed || (side === "bare") === BARE.has(k)),
  );
  const node = used.filter(([k]) => !isPostgres(k));
  const pg = used.filter(([k]) => isPostgres(k)).reduce((s, [, v]) => s + v, 0);
  return { node, pg };
};
const r2 = (n) => n.toFixed(2);
const int = (n) => String(Math.round(n));
const rows = results.map((r) => {
  const at = (c) => r.closed.find((x) => x.connections === c);
  const [c8, c32] = [at(8), at(32)];
  const g = cpu((c8 ?? r.closed[0]).gateway, "gateway");
  const b = cpu((c8 ?? r.closed[0]).bare, "bare");
  const nodeSum = g.node.reduce((s, [, v]) => s + v, 0);
  const bareNode = b.node.reduce((s, [, v]) => s + v, 0);
  const rss = Object.entries((c32 ?? r.closed[0]).gateway.rssMb)
    .filter(([k]) => !isPostgres(k) && !BARE.has(k) && !OTHER.has(k))
    .map(([k, v]) => `${k} ${int(v)}`)
    .join(", ");
  const ratio = (c) => (c ? `**${r2(c.gateway.rps / c.bare.rps)}**` : "–");
  return [
    r.service,
    r.name,
    ratio(c8),
    ratio(c32),
    `${g.node.map(([k, v]) => `${k} ${int(v)}`).join(" + ")} = ${int(nodeSum)}`,
    int(bareNode),
    r2(nodeSum / bareNode),
    `${int(g.pg)} / ${int(b.pg)}`,
    rss,
    r.open ? `${r2(r.open.gateway.p99 / r.open.bare.p99)} (${r.open.rate}/s)` : "–",
  ];
});
const head = [
  "service",
  "route",
  "ratio 8",
  "ratio 32",
  "node CPU µs/req, gateway side (8 conns)",
  "bare µs/req",
  "CPU ×",
  "PostgreSQL µs/req gateway / bare",
  "RSS MB under load (32)",
  "open-loop p99 ratio",
];
const total = (Date.now() - started) / 1000;
const page = [
  "# Every read route against its bare route (npm run bench)",
  "",
  `${new Date().toISOString()} · ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "unknown CPU"}) · Node ${process.version} · load average ${os.loadavg()[0].toFixed(1)} at the end${process.env.BENCH_QUICK === "1" ? " · **quick mode** (1 run of 2 s per row, no open loop)" : ""}.`,
  "",
  `Took ${Math.round(total / 60)} min (${Object.entries(took)
    .map(([k, s]) => `${k} ${Math.round(s)} s`)
    .join(
      ", ",
    )}). Ratio = gateway req/s ÷ bare req/s in the same run (goal ≥ 0.6 at 8 connections, ≥ 0.8 at 32); CPU is µs per request of each process from /proc/<pid>/stat at 8 connections, CPU × = the gateway side's node processes ÷ the bare route's; open-loop p99 ratio = gateway p99 ÷ bare p99 at half the bare route's top rate (goal ≤ 2). The details of each route are in its service's bench/RESULTS*.md.`,
  "",
  `| ${head.join(" | ")} |`,
  `|${head.map(() => "---").join("|")}|`,
  ...rows.map((r) => `| ${r.join(" | ")} |`),
  "",
  ...(tracing
    ? [
        "## Tracing's cost (bench/tracing.mjs)",
        "",
        "CPU µs per request of each process at one rate; goals: off within 3 % of the build without tracing, on (10 % sampled) within 10 % of off.",
        "",
        tracing,
        "",
      ]
    : []),
].join("\n");
writeFileSync(new URL("./RESULTS-summary.md", import.meta.url), page);
process.stdout.write(page);
