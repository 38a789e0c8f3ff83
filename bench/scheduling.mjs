// Scheduling bench (docs/benchmarks.md): on a workspace of 20 calendars, one of them with 10 assignees and
// 10 000 booked meetings, the read routes: slots for 31 days on that calendar, GET /appointments (the first
// page at the default limit, and one day of that calendar by calendarKey, from and to: an agenda's poll),
// GET /appointments/{id} over 500 of the booked meetings, GET /calendars (the whole list); then booking
// throughput on distinct free times at 16 connections, and a storm of 100 concurrent requests on one time.
// Baseline in the same run: bench/scheduling-bare.mjs, a bare Fastify app with the same key check: the
// reads as a developer would write them in one process (plain statements, columns mapped by hand, the
// service's pure slot function, the API's signed cursors), the booking through the service's own
// transaction; no gateway, Connect, crm RPC or Redis. The reads follow bench/compare.mjs' protocol (8 and
// 32 connections, the open loop; each a row of `npm run bench`'s summary); the booking runs BENCH_RUNS
// times through both, alternating, the table giving the median of each figure and the ratio gateway / bare.
// CPU µs per request per process come from /proc (bench/procstat.mjs; PostgreSQL: the backends of the
// scheduling and crm databases), RSS is the peak during the row. Results are appended to
// bench/RESULTS-scheduling.md. compare.mjs' BENCH_QUICK, BENCH_SECONDS, BENCH_RUNS, BENCH_CONNECTIONS,
// BENCH_OPEN_LOOP, and BENCH_MEETINGS, BENCH_ENV change the run; BENCH_PROFILE=<dir> runs the gateway and
// scheduling under node --cpu-prof writing there (<dir>/<name>); BENCH_ONLY=<pattern> runs only the reads whose
// name matches (no booking, no storm).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { appendFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import postgres from "postgres";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";
import { checkEqual, compare, compareTable, cpuProfiled, protocol } from "./compare.mjs";
import { watch } from "./procstat.mjs";

const { seconds: SECONDS, runs: RUNS } = protocol;
const MEETINGS = Number(process.env.BENCH_MEETINGS ?? 10_000);
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
const ENV = process.env.BENCH_ENV ?? "benchsched";
const DAY = 86_400_000;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const log = (m) => process.stderr.write(`[bench:scheduling] ${m}\n`);

// One cursor key for the stack and the bare route, so that both sign a next cursor alike.
const CURSOR_KEYS = randomBytes(32).toString("base64url");
const env = { ...process.env, FUNIL_ENV: ENV, LOG_LEVEL: "warn", RATE_LIMIT_MAX: "100000000", CURSOR_KEYS };
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
const SERVER = env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbUrl = (name) => Object.assign(new URL(SERVER), { pathname: `/${name}` }).toString();
// A fresh start: the meetings of an earlier run would change the slots and take the booking times.
{
  const server = postgres(SERVER, { max: 1, onnotice: () => {} });
  for (const {
    datname,
  } of await server`select datname from pg_database where datname like ${`funil\\_${ENV}\\_%`}`)
    await server.unsafe(`drop database "${datname}" with (force)`);
  await server.end();
}
const stack = await startStack({
  env,
  port: 0,
  stdio: "ignore",
  nodeArgs: cpuProfiled(["gateway", "scheduling"]),
});
const base = stack.gatewayUrl;

async function call(method, p, body, key, headers = {}) {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: {
      authorization: `Bearer ${key ?? stack.adminToken}`,
      "content-type": "application/json",
      ...headers,
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
const must = async (p) => {
  const r = await p;
  if (r.status >= 300) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
};

/** One autocannon run against `url`, with CPU per request and peak RSS of each group of processes. */
async function measure(url, opts, groups) {
  const watcher = watch(groups);
  watcher.start();
  const r = await autocannon({ url, duration: SECONDS, connections: 16, ...opts });
  const usage = watcher.stop();
  const done = r.requests.total || 1;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    bad: r.non2xx + r.errors,
    cpu: Object.fromEntries(Object.entries(usage).map(([n, u]) => [n, Math.round((u.cpu * 1e6) / done)])),
    rss: Object.fromEntries(Object.entries(usage).map(([n, u]) => [n, Math.round(u.rss ?? 0)])),
  };
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
/** The median of each figure over the runs (each figure on its own). */
function medianOf(runs) {
  const pick = (f) => median(runs.map(f));
  const names = Object.keys(runs[0].cpu);
  return {
    rps: pick((r) => r.rps),
    p50: pick((r) => r.p50),
    p99: pick((r) => r.p99),
    bad: runs.reduce((n, r) => n + r.bad, 0),
    cpu: Object.fromEntries(names.map((n) => [n, Math.round(pick((r) => r.cpu[n]))])),
    rss: Object.fromEntries(names.map((n) => [n, Math.max(...runs.map((r) => r.rss[n]))])),
  };
}

let bare;
try {
  const ws = await must(call("POST", "/admin/v1/workspaces", { name: "bench" }));
  const { secret: key } = await must(
    call("POST", `/admin/v1/workspaces/${ws.id}/keys`, {
      name: "bench",
      scopes: ["contacts.write", "calendars.read", "calendars.write"],
    }),
  );
  const members = [];
  for (let i = 0; i < 10; i++)
    members.push(
      (
        await must(
          call("POST", `/admin/v1/workspaces/${ws.id}/members`, {
            name: `M${i}`,
            email: `m${i}@b.test`,
            role: "atendente",
          }),
        )
      ).id,
    );
  const week = [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" }));
  const cal = await must(
    call("POST", `/admin/v1/workspaces/${ws.id}/calendars`, {
      key: "bench",
      name: "Bench",
      durationMin: 15,
      dailyCap: 10_000,
      timezone: "UTC",
      assigneeUserIds: members,
      availability: week,
    }),
  );
  // The workspace's other calendars, so that GET /calendars lists a realistic 20: business hours in a
  // zone of their own, durations from 15 to 60 min, 2 to 5 of the members each. None has meetings.
  const business = [1, 2, 3, 4, 5].flatMap((weekday) => [
    { weekday, start: "09:00", end: "12:00" },
    { weekday, start: "13:00", end: "18:00" },
  ]);
  for (let i = 1; i < 20; i++)
    await must(
      call("POST", `/admin/v1/workspaces/${ws.id}/calendars`, {
        key: `team-${String(i).padStart(2, "0")}`,
        name: `Team ${i} demo`,
        durationMin: [15, 30, 45, 60][i % 4],
        ...(i % 3 === 0 && { slotIntervalMin: 15 }),
        dailyCap: 10 + i,
        timezone: i % 2 ? "America/Sao_Paulo" : "America/Manaus",
        assigneeUserIds: members.slice(i % 6, (i % 6) + 2 + (i % 4)),
        availability: business,
      }),
    );
  const contact = await must(call("POST", "/api/v1/contacts", { name: "Bench", email: "b@b.test" }, key));
  const day0 = Date.parse(new Date(Date.now() + 86_400_000).toISOString().slice(0, 10));
  const slotAt = (i) => new Date(day0 + i * 15 * 60_000).toISOString();
  // The fill: MEETINGS bookings over the next 31 days, 10 assignees, 16 clients.
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < MEETINGS) {
        const i = next++;
        await must(
          call(
            "POST",
            "/api/v1/appointments",
            {
              calendarId: cal.id,
              contactId: contact.id,
              startAt: slotAt(Math.floor(i / 10) % (31 * 96 - 96)),
              assigneeUserId: members[i % 10],
            },
            key,
          ),
        );
        if (i % 2000 === 0) log(`filled ${i}/${MEETINGS}`);
      }
    }),
  );
  const fillRate = MEETINGS / ((Date.now() - started) / 1000);
  log(`fill: ${Math.round(fillRate)} bookings/s`);

  // Fresh statistics and visibility for the plans (this machine's PostgreSQL runs without autovacuum); the
  // meetings GET /appointments/{id} reads: 500 spread over the booked ones.
  let meetingIds;
  {
    const db = postgres(dbUrl(`funil_${ENV}_scheduling`), { max: 1, onnotice: () => {} });
    await db`vacuum analyze`;
    const all = (await db`select id from appointments where workspace_id = ${ws.id} order by id`).map(
      (r) => r.id,
    );
    meetingIds = Array.from(
      { length: Math.min(500, all.length) },
      (_, i) => all[Math.floor((i * all.length) / 500)],
    );
    await db.end();
  }

  // The bare baseline on the same databases, its key map loaded now that the bench's key exists.
  bare = spawn(process.execPath, [path.join(root, "bench", "scheduling-bare.mjs")], {
    env: {
      ...process.env,
      BARE_DB: dbUrl(`funil_${ENV}_scheduling`),
      BARE_CRM_DB: dbUrl(`funil_${ENV}_crm`),
      BARE_GATEWAY_DB: dbUrl(`funil_${ENV}_gateway`),
      BARE_FUNIL_ENV: ENV,
      CURSOR_KEYS,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [barePort] = await once(createInterface({ input: bare.stdout }), "line");
  const bareUrl = `http://127.0.0.1:${barePort}`;

  // PostgreSQL serves each client from its own backend: those of the scheduling and crm databases.
  const pg = postgres(SERVER, { max: 1, onnotice: () => {} });
  const pgOf = { gateway: [], bare: [] };
  const backends = async () =>
    (
      await pg`select pid from pg_stat_activity
        where datname in (${`funil_${ENV}_scheduling`}, ${`funil_${ENV}_crm`}) and pid <> pg_backend_pid()`
    ).map((r) => r.pid);
  const groupsOf = async (via) => {
    const pgPids = await backends();
    const procs =
      via === "gateway"
        ? { gateway: [stack.pid("gateway")], scheduling: [stack.pid("scheduling")], crm: [stack.pid("crm")] }
        : { bare: [bare.pid] };
    return Object.fromEntries(
      Object.entries({ ...procs, postgres: pgPids }).map(([n, pids]) => [n, () => pids]),
    );
  };

  // GETs carry no content-type: an empty JSON body is a 400.
  const auth = { authorization: `Bearer ${key}` };
  const headers = { ...auth, "content-type": "application/json" };
  const from = new Date(day0).toISOString();
  const to = new Date(day0 + 31 * DAY).toISOString();
  const slotsPath = `/api/v1/calendars/${cal.id}/slots?from=${from}&to=${to}`;

  // The same answers first: a booking equal but for its id and times of writing (each read is checked
  // equal before it is measured).
  const slotCount = (await (await fetch(base + slotsPath, { headers: auth })).json()).data.length;
  const bookingAt = (url, at) =>
    fetch(`${url}/api/v1/appointments`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        calendarId: cal.id,
        contactId: contact.id,
        assigneeUserId: members[0],
        startAt: new Date(at).toISOString(),
      }),
    }).then(async (r) => ({ status: r.status, body: await r.json() }));
  const volatile = ({ id, createdAt, updatedAt, startAt, endAt, ...rest }) => rest;
  const [g1, b1] = [await bookingAt(base, day0 + 300 * DAY), await bookingAt(bareUrl, day0 + 301 * DAY)];
  if (
    g1.status !== 201 ||
    b1.status !== 201 ||
    JSON.stringify(volatile(g1.body)) !== JSON.stringify(volatile(b1.body)) ||
    JSON.stringify(Object.keys(g1.body)) !== JSON.stringify(Object.keys(b1.body))
  )
    throw new Error(
      `booking: the bare baseline answers differently\n${JSON.stringify(g1)}\n${JSON.stringify(b1)}`,
    );

  /** Bookings on distinct free times from `firstDay` on: one request per time and assignee. */
  const bookings = (firstDay) => {
    let n = 0;
    return {
      method: "POST",
      headers,
      requests: [
        {
          setupRequest: (req) => {
            const i = n++;
            return {
              ...req,
              path: "/api/v1/appointments",
              body: JSON.stringify({
                calendarId: cal.id,
                contactId: contact.id,
                assigneeUserId: members[i % 10],
                startAt: new Date(day0 + firstDay * DAY + Math.floor(i / 10) * 15 * 60_000).toISOString(),
              }),
            };
          },
        },
      ],
    };
  };

  // The read routes: compare.mjs' protocol, its warm-up included, each checked equal first.
  const sides = {
    gateway: {
      url: base,
      groups: () => ({
        gateway: () => [stack.pid("gateway")],
        scheduling: () => [stack.pid("scheduling")],
        postgres: () => pgOf.gateway,
      }),
    },
    bare: { url: bareUrl, groups: () => ({ bare: () => [bare.pid], postgres: () => pgOf.bare }) },
  };
  const prepare = async () => {
    const apps = async (name) =>
      (await pg`select pid from pg_stat_activity where split_part(application_name, ':', 1) = ${name}`).map(
        (r) => r.pid,
      );
    [pgOf.gateway, pgOf.bare] = [await apps(`funil_${ENV}_scheduling`), await apps("bench_bare")];
  };
  let nextMeeting = 0;
  const byId = [
    {
      setupRequest: (req) => ({
        ...req,
        path: `/api/v1/appointments/${meetingIds[nextMeeting++ % meetingIds.length]}`,
      }),
    },
  ];
  const dayFrom = new Date(day0 + DAY).toISOString();
  const dayTo = new Date(day0 + 2 * DAY).toISOString();
  const reads = [
    [
      `GET /calendars/{id}/slots (31 days, 10 assignees, ${MEETINGS} meetings; first page, ${slotCount} slots)`,
      slotsPath,
    ],
    [`GET /appointments (first page, default limit 100; ${MEETINGS} meetings)`, "/api/v1/appointments"],
    [
      "GET /appointments?calendarKey&from&to (one day of the calendar, first page of 100)",
      `/api/v1/appointments?calendarKey=bench&from=${dayFrom}&to=${dayTo}`,
    ],
    [`GET /appointments/{id} (${meetingIds.length} meetings)`, `/api/v1/appointments/${meetingIds[0]}`, byId],
    ["GET /calendars (whole list, 20 calendars)", "/api/v1/calendars"],
  ];
  const readRows = [];
  for (const [name, p, requests] of reads.filter(([name]) => !ONLY || ONLY.test(name))) {
    await checkEqual(name, base, bareUrl, p, key);
    readRows.push(
      await compare({ service: "scheduling", name, path: p, key, sides, requests, prepare, log }),
    );
  }

  // Unmeasured warm-up of both booking paths (JIT, pools), on times of their own.
  for (const [url, day] of [
    [base, 250],
    [bareUrl, 270],
  ])
    await autocannon({ url, duration: 2, connections: 16, ...bookings(day) });

  const scenarios = ONLY
    ? []
    : [
        {
          title: "POST /appointments (distinct free times), 16 connections",
          // Each run and each path books days of its own (10 days apart: a run books well under 9 600).
          opts: (run, via) => bookings(40 + 20 * run + (via === "bare" ? 10 : 0)),
          path: "",
        },
      ];
  const rows = [];
  for (const sc of scenarios) {
    const runs = { gateway: [], bare: [] };
    for (let run = 0; run < RUNS; run++)
      for (const [via, url] of [
        ["gateway", base],
        ["bare", bareUrl],
      ]) {
        const r = await measure(url + sc.path, sc.opts(run, via), await groupsOf(via));
        runs[via].push(r);
        log(
          `${sc.title} via ${via}, run ${run + 1}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, CPU µs/req ${JSON.stringify(r.cpu)}`,
        );
      }
    rows.push({ title: sc.title, gateway: medianOf(runs.gateway), bare: medianOf(runs.bare) });
  }
  await pg.end();

  // The storm: 100 concurrent requests for one time, three rounds (through the gateway).
  const storm = [];
  for (let round = 0; round < (ONLY ? 0 : 3); round++) {
    const body = {
      calendarId: cal.id,
      contactId: contact.id,
      assigneeUserId: members[0],
      startAt: new Date(day0 + (150 + round) * DAY).toISOString(),
    };
    const t = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => call("POST", "/api/v1/appointments", body, key)),
    );
    const count = (s) => answers.filter((a) => a.status === s).length;
    storm.push({
      ms: Date.now() - t,
      created: count(201),
      taken: count(409),
      other: 100 - count(201) - count(409),
    });
  }
  log(`storm: ${JSON.stringify(storm)}`);

  const lines = [
    `\n## ${new Date().toISOString()} — median of ${RUNS} runs × ${SECONDS} s per path, fill of ${MEETINGS} meetings through the API at ${Math.round(fillRate)}/s`,
    "",
    `Reads (slots, meetings, calendars): bench/compare.mjs' protocol against the plain bare routes (scheduling-bare.mjs), ratio = gateway req/s ÷ bare req/s; ${os.availableParallelism()} cores, load average ${os.loadavg()[0].toFixed(1)} at the end. CPU is µs per request from /proc/<pid>/stat (postgres: each side's backends).`,
    "",
    ...compareTable(readRows),
  ];
  if (!ONLY)
    lines.push(
      "",
      "Gateway path: client → gateway → Connect → scheduling (→ crm, Redis) → PostgreSQL. Bare: bench/scheduling-bare.mjs, the same key check, SQL, driver and JSON in one Fastify process. Ratio = gateway / bare. CPU is µs per request from /proc/<pid>/stat (all threads); pg = the backends of the scheduling and crm databases.",
      "",
      "| scenario | req/s gateway | req/s bare | ratio req/s | p50 ms gateway | p50 ms bare | ratio p50 | p99 ms gateway | p99 ms bare | CPU µs/req gateway / scheduling / crm / pg | CPU µs/req bare / pg | ratio CPU (all processes) | RSS MiB gateway / scheduling / crm | RSS MiB bare | non-2xx |",
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
      ...rows.map(({ title, gateway: g, bare: b }) => {
        const gCpu = g.cpu.gateway + g.cpu.scheduling + g.cpu.crm + g.cpu.postgres;
        const bCpu = b.cpu.bare + b.cpu.postgres;
        return `| ${title} | ${Math.round(g.rps)} | ${Math.round(b.rps)} | ${(g.rps / b.rps).toFixed(2)} | ${g.p50} | ${b.p50} | ${(g.p50 / Math.max(b.p50, 0.5)).toFixed(1)} | ${g.p99} | ${b.p99} | ${g.cpu.gateway} / ${g.cpu.scheduling} / ${g.cpu.crm} / ${g.cpu.postgres} | ${b.cpu.bare} / ${b.cpu.postgres} | ${(gCpu / bCpu).toFixed(1)} | ${g.rss.gateway} / ${g.rss.scheduling} / ${g.rss.crm} | ${b.rss.bare} | ${g.bad + b.bad} |`;
      }),
      "",
      `Storm of 100 concurrent requests on one time (3 rounds): ${storm.map((s) => `${s.created} created, ${s.taken} × 409, ${s.other} other, ${s.ms} ms`).join("; ")}.`,
    );
  appendFileSync(path.join(root, "bench", "RESULTS-scheduling.md"), `${lines.join("\n")}\n`);
  console.log(lines.join("\n"));
  log("appended to bench/RESULTS-scheduling.md");
} finally {
  bare?.kill("SIGTERM");
  await stack.stop();
}
