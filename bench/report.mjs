// bench/RESULTS.md from one run's medians: Markdown tables, the gateway beside the bare baseline.

const int = (n) => String(Math.round(n));
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) : "–");
const table = (head, rows) =>
  [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");

/** Processes on the gateway's path and on the baseline's, in the order the tables show them. */
const STACK = ["gateway", "crm", "timeline", "postgres", "redis"];
const BARE = ["bare", "postgres (bare)"];
const cpu = (m, names) => names.map((n) => int(m.cpuUs[n] ?? 0));
const sum = (m, names) => int(names.reduce((s, n) => s + (m.cpuUs[n] ?? 0), 0));

export function renderResults({ results, machine, opts, fill }) {
  const { paired, openLoop, alone } = results;
  const out = [];
  out.push(
    "# Benchmark results",
    "",
    `${new Date().toISOString()} · **${machine.cores} cores** (${machine.cpu}) · Node ${machine.node} · PostgreSQL ${machine.postgres} (autovacuum ${machine.autovacuum}; VACUUM ANALYZE after the fill)`,
    "",
    `\`npm run bench${opts.full ? " -- --full" : ""}\`: a workspace of ${opts.contacts} contacts and ${opts.deals} deals filled through the API with 16 clients (${fill.contactsPerSecond} contact upserts/s, ${fill.dealsPerSecond} deals/s, a quarter of them then closed by PATCH). Every row is the **median of ${opts.runs} runs of ${opts.seconds} s**; the gateway and the bare baseline (bench/bare.mjs: a Fastify route that checks the key's SHA-256 in a map, runs the same SQL as crm and, for the single reads, timeline (the touches and last activity the gateway composes in) with the same driver and returns the same JSON, checked equal before measuring) alternate run by run on the same data. The load generator (autocannon), the gateway, crm, timeline, PostgreSQL and Redis share the machine; latencies are in ms, measured from every 2xx answer.`,
    "",
    "## Gateway against the bare baseline (closed loop)",
    "",
    table(
      [
        "scenario",
        "conns",
        "gateway req/s",
        "bare req/s",
        "**ratio**",
        "gateway p50 / p99",
        "bare p50 / p99",
        "RPC calls per batch",
        "non-2xx",
      ],
      paired.map((p) => [
        p.name,
        p.connections,
        int(p.gateway.rps),
        int(p.bare.rps),
        `**${ratio(p.gateway.rps, p.bare.rps)}**`,
        `${ms(p.gateway.p50)} / ${ms(p.gateway.p99)}`,
        `${ms(p.bare.p50)} / ${ms(p.bare.p99)}`,
        p.gateway.callsPerStream?.toFixed(1) ?? "",
        p.gateway.errors + p.bare.errors,
      ]),
    ),
    "",
    "## CPU per request (µs, from /proc/<pid>/stat) and RSS under load (MB, highest VmRSS of one process)",
    "",
    "PostgreSQL is the sum over the backends of the path's connection pools; Redis is the whole server (other users of it count too).",
    "",
    table(
      ["scenario", "conns", ...STACK, "**stack total**", ...BARE, "**bare total**", "load generator"],
      paired.map((p) => [
        p.name,
        p.connections,
        ...cpu(p.gateway, STACK),
        `**${sum(p.gateway, STACK)}**`,
        ...cpu(p.bare, BARE),
        `**${sum(p.bare, BARE)}**`,
        `${int(p.gateway.cpuUs["load generator"])} / ${int(p.bare.cpuUs["load generator"])}`,
      ]),
    ),
    "",
    table(
      ["process", "RSS MB under load (highest)"],
      [...STACK, ...BARE].map((n) => [
        n,
        int(Math.max(0, ...paired.flatMap((p) => [p.gateway.rssMb[n] ?? 0, p.bare.rssMb[n] ?? 0]))),
      ]),
    ),
    "",
  );
  if (openLoop.length > 0)
    out.push(
      "## Open loop at half the bare route's top rate (32 connections)",
      "",
      "The gateway's p99 should stay within 2× the bare p99. A gateway that cannot keep up falls short of the asked rate (shown).",
      "",
      table(
        [
          "scenario",
          "asked req/s",
          "gateway got",
          "bare got",
          "gateway p50 / p99",
          "bare p50 / p99",
          "**p99 gateway/bare**",
        ],
        openLoop.map((o) => [
          o.name,
          o.rate,
          int(o.gateway.rps),
          int(o.bare.rps),
          `${ms(o.gateway.p50)} / ${ms(o.gateway.p99)}`,
          `${ms(o.bare.p50)} / ${ms(o.bare.p99)}`,
          `**${ratio(o.gateway.p99, o.bare.p99)}**`,
        ]),
      ),
      "",
    );
  if (alone.length > 0)
    out.push(
      "## Other scenarios (gateway only)",
      "",
      table(
        ["scenario", "conns", "req/s", "p50 / p99", ...STACK.map((n) => `${n} µs`), "non-2xx"],
        alone.map((a) => [
          a.name,
          a.connections,
          int(a.gateway.rps),
          `${ms(a.gateway.p50)} / ${ms(a.gateway.p99)}`,
          ...cpu(a.gateway, STACK),
          a.gateway.errors,
        ]),
      ),
      "",
    );
  return out.join("\n");
}
