// The bare baseline of the learning bench: the learner list and detail as a developer would write them in
// one process, without the architecture (no gateway, no Connect hop, no protobuf, no key store). A Fastify
// app that compares the bearer key's SHA-256 with the one it was given, runs one statement
// per page on the learning database (one pool of postgres.js' default size, no column transform) and maps
// the columns to the API's JSON by hand (learning.mjs checks the bodies equal the gateway's before it
// measures). Started by bench/learning.mjs as its own process, so /proc shows its CPU:
//   BARE_DB=postgres://…/funil_x_learning BARE_KEY_SHA256=<hex> node bench/learning-bare.mjs
// It prints its port on stdout once it listens.
import { createHash } from "node:crypto";
import { encodeCursor, useCursorKeys } from "@funil/rpc";
import Fastify from "fastify";
import postgres from "postgres";

// The stack's cursor keys (the bench passes them to both), so a cursor either side issues is the same.
useCursorKeys(process.env.CURSOR_KEYS?.split(","), () => {});

const sql = postgres(process.env.BARE_DB, {
  max: 10,
  onnotice: () => {},
  connection: { application_name: "bench_bare" },
});
const keyHash = process.env.BARE_KEY_SHA256;
const DAY_MS = 86_400_000;

const error = (code, message) => ({ error: { code, message } });
const iso = (d) => (d === null ? null : d.toISOString());
/** A timestamp json_build_object wrote as text, as the API writes it. */
const isoText = (t) => (t === null ? null : new Date(t).toISOString());
const fold = (text) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

const learnerJson = (r) => ({
  id: r.id,
  name: r.name,
  email: r.email,
  createdAt: r.created_at.toISOString(),
  lastLoginAt: iso(r.last_login_at),
  lastActiveAt: iso(r.last_active_at),
  enrolledCourses: r.enrolled_courses,
  completedCourses: r.completed_courses,
  certificates: r.certificates,
});

async function list(q, activeSince, limit) {
  const like = q === null ? null : `%${fold(q).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const rows = await sql`
    select u.id, u.name, u.email, u.created_at, u.last_login_at, u.last_active_at,
      (select count(*)::int from enrollments e where e.user_id = u.id) as enrolled_courses,
      (select count(*)::int from enrollments e where e.user_id = u.id and e.completed_at is not null)
        as completed_courses,
      (select count(*)::int from certificates c where c.user_id = u.id) as certificates
    from users u
    where u.learner and u.created_at is not null
      ${like === null ? sql`` : sql`and u.search like ${like}`}
      ${activeSince === null ? sql`` : sql`and u.last_active_at >= ${new Date(activeSince)}`}
    order by u.created_at, u.id limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const filters = { q: q ?? undefined, activeSince: activeSince ?? undefined, workspaceId: "platform" };
  return {
    data: page.map(learnerJson),
    nextCursor:
      rows.length > limit
        ? encodeCursor("learners", filters, [last.created_at.toISOString(), last.id])
        : null,
  };
}

async function detail(id, days) {
  const since = new Date(Date.now() - days * DAY_MS);
  const [r] = await sql`
    select u.id, u.name, u.email, u.created_at, u.last_login_at, u.last_active_at,
      (select count(*)::int from sessions s where s.user_id = u.id and s.at >= ${since}) as sessions,
      (select ip from sessions s where s.user_id = u.id order by s.at desc, s.session_key desc limit 1) as last_ip,
      (select json_agg(json_build_object('courseId', e.course_id, 'courseTitle', c.title, 'status', e.status,
                'progressPct', e.progress_pct, 'startedAt', e.started_at, 'completedAt', e.completed_at)
                order by e.started_at nulls last, e.course_id)
         from enrollments e left join courses c on c.id = e.course_id where e.user_id = u.id) as courses,
      (select json_agg(json_build_object('lessonId', p.lesson_id, 'title', l.title, 'courseTitle', c.title,
                'watchSec', p.watch_sec, 'watchPct', p.watch_pct, 'completed', p.completed, 'lastDate', p.at)
                order by p.at desc, p.lesson_id)
         from lesson_progress p left join lessons l on l.id = p.lesson_id left join courses c on c.id = p.course_id
         where p.user_id = u.id and p.at >= ${since}) as lessons,
      (select json_agg(json_build_object('code', k.code, 'courseId', k.course_id,
                'courseTitle', coalesce(k.course_title, c.title), 'issuedAt', k.issued_at) order by k.issued_at, k.code)
         from certificates k left join courses c on c.id = k.course_id where k.user_id = u.id) as certificates,
      (select json_agg(json_build_object('docId', r.doc_id, 'title', d.title, 'readSec', r.read_sec,
                'read', r.read, 'lastDate', r.at) order by r.at desc, r.doc_id)
         from library_reads r left join library_docs d on d.id = r.doc_id
         where r.user_id = u.id and r.at >= ${since}) as library
    from users u where u.id = ${id} and u.learner and u.created_at is not null`;
  if (!r) return undefined;
  return {
    id: r.id,
    name: r.name,
    email: r.email,
    createdAt: r.created_at.toISOString(),
    windowDays: days,
    access: {
      lastLoginAt: iso(r.last_login_at),
      lastActiveAt: iso(r.last_active_at),
      sessionsInWindow: r.sessions,
      lastIp: r.last_ip,
    },
    courses: (r.courses ?? []).map((c) => ({
      ...c,
      startedAt: isoText(c.startedAt),
      completedAt: isoText(c.completedAt),
    })),
    lessons: (r.lessons ?? []).map((l) => ({ ...l, lastDate: isoText(l.lastDate) })),
    certificates: (r.certificates ?? []).map((c) => ({ ...c, issuedAt: isoText(c.issuedAt) })),
    library: (r.library ?? []).map((d) => ({ ...d, lastDate: isoText(d.lastDate) })),
  };
}

const app = Fastify({ logger: false });
app.addHook("onRequest", async (req, reply) => {
  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
  if (createHash("sha256").update(token).digest("hex") !== keyHash)
    return reply.code(401).send(error("unauthorized", "bad key"));
});
app.get("/api/v1/platform/users", async (req) => {
  const { q, activeSince, limit } = req.query;
  return list(q ?? null, activeSince ?? null, Number(limit ?? 50));
});
app.get("/api/v1/platform/users/:id", async (req, reply) => {
  const learner = await detail(req.params.id, Number(req.query.days ?? 30));
  return learner ?? reply.code(404).send(error("not_found", "learner not found"));
});

const address = await app.listen({ port: 0, host: "127.0.0.1" });
console.log(new URL(address).port);
process.once("SIGTERM", () =>
  app
    .close()
    .then(() => sql.end({ timeout: 2 }))
    .then(() => process.exit(0)),
);
