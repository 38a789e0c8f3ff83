// The learning bench (docs/benchmarks.md): a platform of learners, courses and lesson-progress messages written as
// an NDJSON file, loaded by `npm run import:platform` (its lines/s and peak memory), then the learner list
// and detail driven with autocannon through the gateway and through the bare baseline (learning-bare.mjs:
// the same store and JSON without the architecture), with CPU µs per request per process and RSS from /proc.
//   npm run bench:learning                  10 000 learners, 500 courses, 500 000 progress messages
//   BENCH_FULL=1 npm run bench:learning     100 000 learners, 2 000 courses, 10 000 000 messages (the issue's size)
// BENCH_LEARNERS, BENCH_COURSES, BENCH_PROGRESS, BENCH_SECONDS, BENCH_CONNECTIONS change the run. Results are
// appended to bench/RESULTS-learning.md.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import {
  appendFileSync,
  createWriteStream,
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import autocannon from "autocannon";
import postgres from "postgres";
import { startStack } from "../scripts/stack.mjs";

const FULL = process.env.BENCH_FULL === "1";
const LEARNERS = Number(process.env.BENCH_LEARNERS ?? (FULL ? 100_000 : 10_000));
const COURSES = Number(process.env.BENCH_COURSES ?? (FULL ? 2_000 : 500));
const PROGRESS = Number(process.env.BENCH_PROGRESS ?? (FULL ? 10_000_000 : 500_000));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const LESSONS_PER_COURSE = 10;
const ENV = "benchlearn";
const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const NOW = Date.now();
const DAY = 86_400_000;

const log = (msg) => process.stderr.write(`[bench:learning] ${msg}\n`);
const dbUrl = (name) => Object.assign(new URL(SERVER), { pathname: `/${name}` }).toString();

/** A small deterministic PRNG (mulberry32), so two runs load the same platform. */
function random(seed) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Writes the platform file with backpressure; returns its line count. */
async function generate(path) {
  const rnd = random(12);
  const pick = (n) => Math.floor(rnd() * n);
  const out = createWriteStream(path);
  let lines = 0;
  let buffer = "";
  const line = async (subject, data) => {
    buffer += `${JSON.stringify({ subject: `platform.${subject}`, data })}\n`;
    lines++;
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await once(out, "drain");
      buffer = "";
    }
  };
  const iso = (ms) => new Date(ms).toISOString();
  for (let c = 0; c < COURSES; c++)
    await line("course.upserted", {
      courseId: `c${c}`,
      title: `Curso ${c}`,
      lessons: Array.from({ length: LESSONS_PER_COURSE }, (_, l) => ({
        lessonId: `c${c}-l${l}`,
        title: `Aula ${l}`,
      })),
    });
  for (let d = 0; d < 200; d++)
    await line("library.doc.upserted", { docId: `d${d}`, title: `Documento ${d}` });
  const enrolled = [];
  // One user in ten never enrolls: a user, not a learner.
  for (let u = 0; u < LEARNERS * 1.1; u++) {
    const id = `u${String(u).padStart(7, "0")}`;
    await line("user.upserted", {
      userId: id,
      name: `Aluno ${u} ${u % 7 === 0 ? "Conceição" : "Silva"}`,
      email: `aluno${u}@plat.example`,
      createdAt: iso(NOW - 400 * DAY + u * 60_000),
    });
    if (u % 11 === 10) continue;
    const courses = [];
    for (let k = 1 + pick(5); k > 0; k--) courses.push(pick(COURSES));
    enrolled.push([id, courses]);
    for (const c of courses) {
      const done = rnd() < 0.3;
      await line("enrollment.upserted", {
        userId: id,
        courseId: `c${c}`,
        status: "active",
        progressPct: done ? 100 : pick(100),
        startedAt: iso(NOW - 200 * DAY),
        completedAt: done ? iso(NOW - pick(100) * DAY) : null,
      });
      if (done)
        await line("certificate.issued", {
          userId: id,
          code: `${id}-c${c}`,
          courseId: `c${c}`,
          courseTitle: `Curso ${c}`,
          issuedAt: iso(NOW - pick(100) * DAY),
        });
    }
    // One learner in twenty never logged in.
    if (u % 20 === 0) continue;
    for (let s = 0; s < 3; s++)
      await line("session.opened", {
        userId: id,
        at: iso(NOW - pick(120 * 24) * 3_600_000),
        ip: `10.${pick(256)}.${pick(256)}.${pick(256)}`,
        sessionId: `${id}-s${s}`,
      });
    await line("session.seen", { userId: id, at: iso(NOW - pick(120 * 24) * 3_600_000) });
    await line("library.read", {
      userId: id,
      docId: `d${pick(200)}`,
      readSec: pick(600),
      read: rnd() < 0.5,
      at: iso(NOW - pick(120) * DAY),
    });
  }
  // Cumulative progress, in no particular order: repeats of a (learner, lesson) with other `at`s.
  for (let p = 0; p < PROGRESS; p++) {
    const [id, courses] = enrolled[pick(enrolled.length)];
    const c = courses[pick(courses.length)];
    const watchPct = pick(101);
    await line("lesson.progress", {
      userId: id,
      lessonId: `c${c}-l${pick(LESSONS_PER_COURSE)}`,
      courseId: `c${c}`,
      watchSec: watchPct * 6,
      watchPct,
      completed: watchPct === 100,
      at: iso(NOW - pick(120 * 24) * 3_600_000),
    });
    if (p % 1_000_000 === 999_999) log(`generated ${p + 1} progress messages`);
  }
  out.end(buffer);
  await once(out, "close");
  return lines;
}

// --- /proc: CPU seconds (utime + stime, every thread) and resident memory of a process ---
const TICKS = 100;
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return 0;
  }
}
function rssMb(pid) {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}
/** The pid of this stack's process running `main` (matched by its FUNIL_ENV). */
function pidOf(main) {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(main)) continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(`FUNIL_ENV=${ENV}`))
        return Number(entry);
    } catch {}
  }
  throw new Error(`no process runs ${main}`);
}

/** Runs the import CLI; its progress bar shows on stderr. Returns wall seconds and peak RSS. */
async function runImport(path, env) {
  const started = Date.now();
  const child = spawn(process.execPath, ["services/learning/dist/import.js", path], {
    env,
    stdio: ["ignore", "inherit", "pipe"],
  });
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb(child.pid));
  }, 200);
  let summary = "";
  createInterface({ input: child.stderr }).on("line", (l) => {
    process.stderr.write(`${l}\n`);
    if (l.startsWith("imported")) summary = l;
  });
  const [code] = await once(child, "close");
  clearInterval(timer);
  if (code !== 0) throw new Error(`import failed (${code})`);
  return { seconds: (Date.now() - started) / 1000, peakRss: peak, summary };
}

async function json(url, key) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json() };
}

async function load(url, key, requests, pids) {
  const before = Object.fromEntries(
    Object.entries(pids).map(([k, ps]) => [k, ps.reduce((s, p) => s + cpuSeconds(p), 0)]),
  );
  const rss = Object.fromEntries(Object.keys(pids).map((k) => [k, 0]));
  const timer = setInterval(() => {
    for (const [k, ps] of Object.entries(pids)) rss[k] = Math.max(rss[k], ...ps.map(rssMb));
  }, 250);
  const result = await autocannon({
    url,
    headers: { authorization: `Bearer ${key}` },
    connections: CONNECTIONS,
    duration: SECONDS,
    requests,
  });
  clearInterval(timer);
  const total = result.requests.total || 1;
  const cpuUs = Object.fromEntries(
    Object.entries(pids).map(([k, ps]) => [
      k,
      Math.round(((ps.reduce((s, p) => s + cpuSeconds(p), 0) - before[k]) * 1e6) / total),
    ]),
  );
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    cpuUs,
    rss,
  };
}

const file = join(tmpdir(), `funil-bench-learning-${LEARNERS}-${PROGRESS}.ndjson`);
log(`generating ${LEARNERS} learners, ${COURSES} courses, ${PROGRESS} progress messages → ${file}`);
const lines = await generate(file);
log(`${lines} lines`);

const server = postgres(SERVER, { max: 1, onnotice: () => {} });
for (const {
  datname,
} of await server`select datname from pg_database where datname like ${`funil\\_${ENV}\\_%`}`)
  await server.unsafe(`drop database "${datname}" with (force)`);
await server.end();

const stack = await startStack({
  env: { ...process.env, FUNIL_ENV: ENV, LOG_LEVEL: "warn", RATE_LIMIT_MAX: "100000000" },
  port: 0,
  stdio: "ignore",
});
let bare;
try {
  const imported = await runImport(file, { ...process.env, FUNIL_ENV: ENV });
  const lrn = postgres(dbUrl(`funil_${ENV}_learning`), { max: 1, onnotice: () => {} });
  await lrn`vacuum analyze`;
  const [{ size }] = await lrn`select pg_size_pretty(pg_database_size(current_database())) as size`;
  const sample = (await lrn`select id from users where learner and created_at is not null order by id`).map(
    (r) => r.id,
  );

  const admin = (path, body) =>
    fetch(`${stack.gatewayUrl}/admin/v1${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  const ws = await admin("/workspaces", { name: "Operator", operator: true });
  const { secret: key } = await admin(`/workspaces/${ws.id}/keys`, {
    name: "bench",
    scopes: ["platform.read"],
  });

  bare = spawn(process.execPath, ["bench/learning-bare.mjs"], {
    env: {
      ...process.env,
      BARE_DB: dbUrl(`funil_${ENV}_learning`),
      BARE_KEY_SHA256: createHash("sha256").update(key).digest("hex"),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [barePort] = await once(createInterface({ input: bare.stdout }), "line");
  const bareUrl = `http://127.0.0.1:${barePort}`;

  const activeSince = new Date(NOW - 30 * DAY).toISOString();
  const ids = Array.from({ length: 500 }, (_, i) => sample[Math.floor((i * sample.length) / 500)]);
  let next = 0;
  const detail = [
    { setupRequest: (req) => ({ ...req, path: `/api/v1/platform/users/${ids[next++ % ids.length]}` }) },
  ];
  const scenarios = [
    ["GET /platform/users (first page, limit 50)", "/api/v1/platform/users"],
    ["GET /platform/users?q=conceicao (trigram search)", "/api/v1/platform/users?q=conceicao"],
    ["GET /platform/users?q=aluno12345 (rare match)", "/api/v1/platform/users?q=aluno12345"],
    [
      "GET /platform/users?activeSince=<30 days ago>",
      `/api/v1/platform/users?activeSince=${encodeURIComponent(activeSince)}`,
    ],
    [
      `GET /platform/users/{id} (${ids.length} learners, days=30)`,
      `/api/v1/platform/users/${ids[0]}`,
      detail,
    ],
  ];
  // PostgreSQL serves each client from its own backend process: those of the learning database, now.
  const backends = async () =>
    (
      await lrn`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    ).map((r) => r.pid);
  const gatewayPids = {
    gateway: [pidOf("services/gateway/dist/main.js")],
    learning: [pidOf("services/learning/dist/main.js")],
  };
  // Unmeasured warm-up, so the first row does not pay for the JIT of both paths.
  for (const url of [stack.gatewayUrl, bareUrl])
    await autocannon({
      url: `${url}/api/v1/platform/users`,
      headers: { authorization: `Bearer ${key}` },
      connections: CONNECTIONS,
      duration: 3,
    });
  const rows = [];
  for (const [name, path, requests] of scenarios) {
    const [viaGateway, viaBare] = await Promise.all([
      json(stack.gatewayUrl + path, key),
      json(bareUrl + path, key),
    ]);
    if (viaGateway.status !== 200 || JSON.stringify(viaGateway.body) !== JSON.stringify(viaBare.body))
      throw new Error(
        `${name}: the bare baseline answers differently\n${JSON.stringify(viaGateway).slice(0, 500)}\n${JSON.stringify(viaBare).slice(0, 500)}`,
      );
    const pg = await backends();
    const g = await load(stack.gatewayUrl + path, key, requests, { ...gatewayPids, postgres: pg });
    const pg2 = await backends();
    const b = await load(bareUrl + path, key, requests, { bare: [bare.pid], postgres: pg2 });
    const ratio = (g.p50 / Math.max(b.p50, 0.01)).toFixed(1);
    rows.push(
      `| ${name} | ${g.rps} | ${g.p50} | ${g.p99} | ${g.cpuUs.gateway} / ${g.cpuUs.learning} / ${g.cpuUs.postgres} | ${Math.round(g.rss.gateway)} / ${Math.round(g.rss.learning)} | ${b.rps} | ${b.p50} | ${b.p99} | ${b.cpuUs.bare} / ${b.cpuUs.postgres} | ${ratio}× | ${g.errors + b.errors} |`,
    );
    log(rows.at(-1));
  }
  await lrn.end();
  const table = [
    `## ${new Date().toISOString()}: ${LEARNERS} learners, ${COURSES} courses, ${PROGRESS} progress messages${FULL ? " (full size)" : ""}`,
    "",
    `Import: ${lines} lines in ${imported.seconds.toFixed(1)} s = **${Math.round(lines / imported.seconds)} lines/s** end to end (${imported.summary}); import process peak RSS ${Math.round(imported.peakRss)} MB; learning database ${size} after VACUUM ANALYZE.`,
    `${CONNECTIONS} connections, ${SECONDS} s per row; gateway, learning, PostgreSQL and the load generator share one ${process.platform} machine. CPU is µs per request from /proc/<pid>/stat (PostgreSQL: the learning database's backends). The bare baseline (bench/learning-bare.mjs) runs the learning store's SQL and JSON in one node:http process; ratio = gateway p50 / bare p50.`,
    "",
    "| scenario | req/s | p50 ms | p99 ms | CPU µs/req gateway / learning / pg | RSS MB gateway / learning | bare req/s | bare p50 | bare p99 | CPU µs/req bare / pg | ratio p50 | non-2xx |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
  ].join("\n");
  console.log(table);
  const results = new URL("./RESULTS-learning.md", import.meta.url);
  if (!existsSync(results)) writeFileSync(results, "# Learning bench results (npm run bench:learning)\n\n");
  appendFileSync(results, `${table}\n`);
} finally {
  bare?.kill("SIGTERM");
  await stack.stop();
  rmSync(file, { force: true });
}
