// Scheduling bench (issue 9): booking throughput on distinct free times at 16 connections, slots for 31
// days on a calendar of 10 assignees with 10 000 booked meetings, and a storm of 100 concurrent requests on
// one time. Baseline in the same run: GET /calendars (gateway → scheduling → one indexed read), so each
// scenario is also given as a ratio to it. CPU µs per request per process come from /proc/<pid>/stat.
// Results are appended to bench/RESULTS-scheduling.md. BENCH_SECONDS, BENCH_MEETINGS change the run.
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { ensureInfra } from "../scripts/infra.mjs";
import { startStack } from "../scripts/stack.mjs";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const MEETINGS = Number(process.env.BENCH_MEETINGS ?? 10_000);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const log = (m) => process.stderr.write(`[bench:scheduling] ${m}\n`);

const env = { ...process.env, FUNIL_ENV: "benchsched", LOG_LEVEL: "warn", RATE_LIMIT_MAX: "100000000" };
for (const name of Object.keys(env))
  if (/_(PORT|URL)$/.test(name) && !/^(DATABASE|REDIS|NATS)_URL$/.test(name)) delete env[name];
delete env.PORT;
await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });
const stack = await startStack({ env, port: 0, stdio: "ignore" });
const base = stack.gatewayUrl;

/** The pids of this stack's processes, by name, from their command lines. */
function pids() {
  const out = {};
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const m = /services\/(\w+)\/dist\/main\.js/.exec(cmd);
      if (
        m &&
        cmd.includes(root) &&
        readFileSync(`/proc/${pid}/environ`, "utf8").includes("FUNIL_ENV=benchsched")
      )
        out[m[1]] = Number(pid);
    } catch {}
  }
  return out;
}
const TICK_US = 1e6 / 100; // USER_HZ
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_US;
};
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

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

/** One autocannon row with CPU and RSS of each process over the run. */
async function measure(title, opts) {
  const procs = pids();
  const before = Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, cpuOf(p)]));
  const { path: target = "/", ...rest } = opts;
  // autocannon takes the path in the url; a `path` option would be ignored (every request to /).
  const r = await autocannon({ url: `${base}${target}`, duration: SECONDS, connections: 16, ...rest });
  const done = r.requests.total || 1;
  const cpu = Object.fromEntries(
    Object.entries(procs).map(([n, p]) => [n, Math.round((cpuOf(p) - before[n]) / done)]),
  );
  const rss = Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, Math.round(rssOf(p))]));
  log(`${title}: ${Math.round(r.requests.average)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms`);
  return {
    title,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    cpu,
    rss,
  };
}

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

  // GETs carry no content-type: an empty JSON body is a 400.
  const auth = { authorization: `Bearer ${key}` };
  const headers = { ...auth, "content-type": "application/json" };
  const rows = [];
  rows.push(await measure("GET /calendars (baseline)", { path: "/api/v1/calendars", headers: auth }));
  const from = new Date(day0).toISOString();
  const to = new Date(day0 + 31 * 86_400_000).toISOString();
  rows.push(
    await measure(`GET /calendars/{id}/slots, 31 days, 10 assignees, ${MEETINGS} meetings`, {
      path: `/api/v1/calendars/${cal.id}/slots?from=${from}&to=${to}`,
      headers: auth,
    }),
  );
  // Distinct free times: a fresh calendar day range far ahead, one request per time and assignee.
  let n = 0;
  const far = day0 + 40 * 86_400_000;
  rows.push(
    await measure("POST /appointments (distinct free times)", {
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
                startAt: new Date(far + Math.floor(i / 10) * 15 * 60_000).toISOString(),
              }),
            };
          },
        },
      ],
    }),
  );
  // The storm: 100 concurrent requests for one time, three rounds.
  const storm = [];
  for (let round = 0; round < 3; round++) {
    const body = {
      calendarId: cal.id,
      contactId: contact.id,
      assigneeUserId: members[0],
      startAt: new Date(day0 + (60 + round) * 86_400_000).toISOString(),
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

  const baseline = rows[0].rps;
  const procs = Object.keys(rows[0].cpu).sort();
  const lines = [
    `\n## ${new Date().toISOString()} — ${SECONDS} s per row, 16 connections, fill of ${MEETINGS} meetings at ${Math.round(fillRate)}/s`,
    "",
    `| scenario | req/s | ratio to baseline | p50 ms | p99 ms | non-2xx | ${procs.map((p) => `CPU µs/req ${p}`).join(" | ")} | ${procs.map((p) => `RSS MiB ${p}`).join(" | ")} |`,
    `|---|---|---|---|---|---|${procs.map(() => "---|").join("")}${procs.map(() => "---|").join("")}`,
    ...rows.map(
      (r) =>
        `| ${r.title} | ${Math.round(r.rps)} | ${(r.rps / baseline).toFixed(2)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${procs.map((p) => r.cpu[p]).join(" | ")} | ${procs.map((p) => r.rss[p]).join(" | ")} |`,
    ),
    "",
    `Storm of 100 concurrent requests on one time (3 rounds): ${storm.map((s) => `${s.created} created, ${s.taken} × 409, ${s.other} other, ${s.ms} ms`).join("; ")}.`,
  ];
  appendFileSync(path.join(root, "bench", "RESULTS-scheduling.md"), `${lines.join("\n")}\n`);
  log("appended to bench/RESULTS-scheduling.md");
} finally {
  await stack.stop();
}
