// The learning bench (docs/benchmarks.md): a platform of learners, courses and lesson-progress messages written as
// an NDJSON file, loaded by `npm run import:platform` (its lines/s and peak memory), then the learner list
// and detail driven through the gateway and through the bare route (learning-bare.mjs: the same answers
// written plainly in one process) by bench/compare.mjs, with CPU µs per request per process and RSS from /proc.
//   npm run bench:learning                  10 000 learners, 500 courses, 500 000 progress messages
//   BENCH_FULL=1 npm run bench:learning     100 000 learners, 2 000 courses, 10 000 000 messages (the issue's size)
// BENCH_LEARNERS, BENCH_COURSES, BENCH_PROGRESS, BENCH_ONLY (a pattern of the routes to run), BENCH_ENV (default
// benchlearn) and compare.mjs' BENCH_QUICK, BENCH_RUNS, BENCH_SECONDS,
// BENCH_CONNECTIONS, BENCH_OPEN_LOOP change the run. Results are
// appended to bench/RESULTS-learning.md.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { appendFileSync, createWriteStream, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import postgres from "postgres";
import { startStack } from "../scripts/stack.mjs";
import { checkEqual, compare, compareTable, cpuProfiled, protocol } from "./compare.mjs";

const FULL = process.env.BENCH_FULL === "1";
const LEARNERS = Number(process.env.BENCH_LEARNERS ?? (FULL ? 100_000 : 10_000));
const COURSES = Number(process.env.BENCH_COURSES ?? (FULL ? 2_000 : 500));
const PROGRESS = Number(process.env.BENCH_PROGRESS ?? (FULL ? 10_000_000 : 500_000));
const LESSONS_PER_COURSE = 10;
const ENV = process.env.BENCH_ENV ?? "benchlearn";
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

const iso = (ms) => new Date(ms).toISOString();

/** Writes the platform file with backpressure; returns its line count. */
async function generate(path) {
  const rnd = random(12);
  const pick = (n) => Math.floor(rnd() * n);
  const file = platformFile(path);
  await catalog(file.line);
  const enrolled = [];
  // One user in ten never enrolls: a user, not a learner.
  for (let u = 0; u < LEARNERS * 1.1; u++) {
    const learner = await user(file.line, u, rnd, pick);
    if (learner) enrolled.push(learner);
  }
  await progress(file.line, enrolled, pick);
  return file.end();
}

/** line(subject, data) appends one message, in 1 MiB writes; end() closes the file and counts its lines. */
function platformFile(path) {
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
  const end = async () => {
    out.end(buffer);
    await once(out, "close");
    return lines;
  };
  return { line, end };
}

/** The courses with their lessons, and the library's documents. */
async function catalog(line) {
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
}

/** User `u`: the user, and unless it never enrolls its enrollments, certificates, sessions and reads. */
async function user(line, u, rnd, pick) {
  const id = `u${String(u).padStart(7, "0")}`;
  await line("user.upserted", {
    userId: id,
    name: `Aluno ${u} ${u % 7 === 0 ? "Conceição" : "Silva"}`,
    email: `aluno${u}@plat.example`,
    createdAt: iso(NOW - 400 * DAY + u * 60_000),
  });
  if (u % 11 === 10) return undefined;
  const courses = [];
  for (let k = 1 + pick(5); k > 0; k--) courses.push(pick(COURSES));
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
  if (u % 20 === 0) return [id, courses];
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
  return [id, courses];
}

/** Cumulative progress, in no particular order: repeats of a (learner, lesson) with other `at`s. */
async function progress(line, enrolled, pick) {
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
}

/** Resident memory of a process (the import's peak). */
function rssMb(pid) {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
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

// One cursor key for the stack and the bare route, so that both sign a next cursor alike.
const CURSOR_KEYS = randomBytes(32).toString("base64url");
const stack = await startStack({
  env: { ...process.env, FUNIL_ENV: ENV, LOG_LEVEL: "warn", RATE_LIMIT_MAX: "100000000", CURSOR_KEYS },
  port: 0,
  stdio: "ignore",
  nodeArgs: cpuProfiled(["gateway", "learning"]),
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
      CURSOR_KEYS,
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
  // PostgreSQL serves each client from its own backend process: those of each side's pool, at each run.
  const backends = async (app) =>
    (await lrn`select pid from pg_stat_activity where split_part(application_name, ':', 1) = ${app}`).map(
      (r) => r.pid,
    );
  const pgOf = { gateway: [], bare: [] };
  const sides = {
    gateway: {
      url: stack.gatewayUrl,
      groups: () => ({
        gateway: () => [stack.pid("gateway")],
        learning: () => [stack.pid("learning")],
        postgres: () => pgOf.gateway,
      }),
    },
    bare: { url: bareUrl, groups: () => ({ bare: () => [bare.pid], postgres: () => pgOf.bare }) },
  };
  const results = [];
  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
  for (const [name, path, requests] of scenarios.filter(([n]) => !only || only.test(n))) {
    await checkEqual(name, stack.gatewayUrl, bareUrl, path, key);
    const prepare = async () => {
      [pgOf.gateway, pgOf.bare] = [await backends(`funil_${ENV}_learning`), await backends("bench_bare")];
    };
    results.push(await compare({ service: "learning", name, path, key, sides, requests, prepare, log }));
  }
  await lrn.end();
  const table = [
    `## ${new Date().toISOString()}: ${LEARNERS} learners, ${COURSES} courses, ${PROGRESS} progress messages${FULL ? " (full size)" : ""}`,
    "",
    `Import: ${lines} lines in ${imported.seconds.toFixed(1)} s = **${Math.round(lines / imported.seconds)} lines/s** end to end (${imported.summary}); import process peak RSS ${Math.round(imported.peakRss)} MB; learning database ${size} after VACUUM ANALYZE.`,
    `Median of ${protocol.runs} runs of ${protocol.seconds} s per row, the gateway and the bare route (bench/learning-bare.mjs: one statement per page, columns mapped by hand, one pool of 10) alternating; ratio = gateway req/s ÷ bare req/s. Gateway, learning, PostgreSQL and the load generator share one ${os.availableParallelism()}-core machine (load average ${os.loadavg()[0].toFixed(1)} at the end). CPU is µs per request from /proc/<pid>/stat (postgres: each side's backends).`,
    "",
    ...compareTable(results),
    "",
  ].join("\n");
  console.log(table);
  const resultsFile = new URL("./RESULTS-learning.md", import.meta.url);
  if (!existsSync(resultsFile))
    writeFileSync(resultsFile, "# Learning bench results (npm run bench:learning)\n\n");
  appendFileSync(resultsFile, `${table}\n`);
} finally {
  bare?.kill("SIGTERM");
  await stack.stop();
  rmSync(file, { force: true });
}
