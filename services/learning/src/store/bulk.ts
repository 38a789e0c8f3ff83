import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream, type WriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { finished, pipeline } from "node:stream/promises";
import type { Sql, TransactionSql } from "@funil/db";
import { copyLine, STAGING, type Staging, type Value } from "../bulk.js";

const CHUNK = 256 * 1024;
const DEADLOCK = "40P01";

/**
 * Staging for one import run. While the file is read, each kind of row is
 * spooled to its own temporary file in COPY's text format; load() then COPYs
 * them one after the other into unlogged scratch tables over a single
 * connection (an import never takes more than two of the server's
 * connections), merge() applies them to the real tables in one transaction,
 * and drop() removes tables and files whatever happened. Nothing reaches the
 * real tables before merge() commits.
 */
export async function openStaging(sql: Sql) {
  const run = randomBytes(6).toString("hex");
  const names = Object.fromEntries(
    (Object.keys(STAGING) as Staging[]).map((t) => [t, `import_${run}_${t}`]),
  ) as Record<Staging, string>;
  for (const t of Object.keys(STAGING) as Staging[])
    await sql.unsafe(`create unlogged table ${names[t]} (line bigint not null, ${STAGING[t]})`);
  const dir = await mkdtemp(join(tmpdir(), "funil-import-"));
  const spools = new Map<Staging, { file: string; out: WriteStream; buffer: string }>();

  async function flush(spool: { out: WriteStream; buffer: string }) {
    const chunk = spool.buffer;
    spool.buffer = "";
    if (!spool.out.write(chunk)) await once(spool.out, "drain");
  }

  return {
    /** Adds a row; resolves once its spool accepts more (backpressure keeps memory flat). */
    async add(t: Staging, line: number, values: Value[]) {
      let spool = spools.get(t);
      if (!spool) {
        const file = join(dir, `${t}.copy`);
        spool = { file, out: createWriteStream(file), buffer: "" };
        spools.set(t, spool);
      }
      spool.buffer += copyLine([line, ...values]);
      if (spool.buffer.length >= CHUNK) await flush(spool);
    },

    /** Closes the spools and COPYs each into its staging table. */
    async load() {
      for (const [t, spool] of spools) {
        if (spool.buffer) await flush(spool);
        spool.out.end();
        await finished(spool.out);
        await pipeline(createReadStream(spool.file), await sql`copy ${sql(names[t])} from stdin`.writable());
      }
    },

    /** Stops writing the spools (drop() removes them). */
    async abort() {
      await Promise.all(
        [...spools.values()].map(async ({ out }) => {
          out.destroy();
          await finished(out).catch(() => {});
        }),
      );
    },

    /**
     * Applies everything staged in one transaction, with the live stream's rules (store/platform.ts).
     * The live consumer may hold a row the merge needs while waiting for one the merge holds: PostgreSQL
     * then cancels one of the two; when it is the merge, it runs again (the staging tables are intact).
     */
    async merge() {
      for (let attempt = 1; ; attempt++) {
        try {
          return await sql.begin((tx) => mergeStaged(tx, names));
        } catch (err) {
          if ((err as { code?: string }).code !== DEADLOCK || attempt >= 5) throw err;
        }
      }
    },

    async drop() {
      for (const t of Object.keys(STAGING) as Staging[]) await sql.unsafe(`drop table if exists ${names[t]}`);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Set-based merge. Upserts without a clock (users, courses, lessons,
 * enrollments, certificates, documents): the last line of the file stands, as
 * the last message of the stream does. Sessions: the first line of a session
 * stands. Lesson progress and library reads are cumulative: the latest `at`
 * stands (ties: the larger values), against the table too, so an older file
 * never rolls back a newer state. lastLoginAt/lastActiveAt only move forward.
 */
async function mergeStaged(tx: TransactionSql, s: Record<Staging, string>) {
  // The dedupe sorts of a large file fit in memory instead of spilling to disk.
  await tx`set local work_mem = '256MB'`;
  // The live consumer's writes wait for the merge (a few seconds per million lines) instead of
  // interleaving with it row by row; reads go on.
  await tx`
    lock table users, courses, lessons, enrollments, sessions, lesson_progress, certificates, library_docs,
      library_reads in share row exclusive mode`;
  const t = (name: Staging) => tx(s[name]);
  await tx`
    insert into users (id, name, email, created_at, search)
    select distinct on (id) id, name, email, created_at, search from ${t("users")} order by id, line desc
    on conflict (id) do update set name = excluded.name, email = excluded.email,
      created_at = excluded.created_at, search = excluded.search`;
  await tx`
    insert into courses (id, title)
    select distinct on (id) id, title from ${t("courses")} order by id, line desc
    on conflict (id) do update set title = excluded.title`;
  await tx`
    insert into lessons (id, course_id, title)
    select distinct on (id) id, course_id, title from ${t("lessons")} order by id, line desc
    on conflict (id) do update set course_id = excluded.course_id, title = excluded.title`;
  await tx`
    insert into enrollments (user_id, course_id, status, progress_pct, started_at, completed_at)
    select distinct on (user_id, course_id) user_id, course_id, status, progress_pct, started_at, completed_at
    from ${t("enrollments")} order by user_id, course_id, line desc
    on conflict (user_id, course_id) do update set status = excluded.status,
      progress_pct = excluded.progress_pct, started_at = excluded.started_at,
      completed_at = excluded.completed_at`;
  await tx`
    insert into users (id, learner) select distinct user_id, true from ${t("enrollments")}
    on conflict (id) do update set learner = true where not users.learner`;
  await tx`
    insert into sessions (user_id, session_key, at, ip)
    select distinct on (user_id, session_key) user_id, session_key, at, ip
    from ${t("sessions")} order by user_id, session_key, line
    on conflict do nothing`;
  await tx`
    insert into users (id, last_login_at, last_active_at)
    select user_id, max(login), max(active) from (
      select user_id, at as login, at as active from ${t("sessions")}
      union all select user_id, null, at from ${t("seen")}) a
    group by user_id
    on conflict (id) do update set
      last_login_at = greatest(users.last_login_at, excluded.last_login_at),
      last_active_at = greatest(users.last_active_at, excluded.last_active_at)`;
  await tx`
    insert into lesson_progress as p (user_id, lesson_id, course_id, watch_sec, watch_pct, completed, at)
    select distinct on (user_id, lesson_id) user_id, lesson_id, course_id, watch_sec, watch_pct, completed, at
    from ${t("progress")}
    order by user_id, lesson_id, at desc, watch_sec desc, watch_pct desc, completed desc
    on conflict (user_id, lesson_id) do update set course_id = excluded.course_id,
      watch_sec = excluded.watch_sec, watch_pct = excluded.watch_pct, completed = excluded.completed,
      at = excluded.at
    where (excluded.at, excluded.watch_sec, excluded.watch_pct, excluded.completed)
        > (p.at, p.watch_sec, p.watch_pct, p.completed)`;
  await tx`
    insert into certificates (code, user_id, course_id, course_title, issued_at)
    select distinct on (code) code, user_id, course_id, course_title, issued_at
    from ${t("certificates")} order by code, line desc
    on conflict (code) do update set user_id = excluded.user_id, course_id = excluded.course_id,
      course_title = excluded.course_title, issued_at = excluded.issued_at`;
  await tx`
    insert into library_docs (id, title)
    select distinct on (id) id, title from ${t("docs")} order by id, line desc
    on conflict (id) do update set title = excluded.title`;
  await tx`
    insert into library_reads as r (user_id, doc_id, read_sec, read, at)
    select distinct on (user_id, doc_id) user_id, doc_id, read_sec, read, at
    from ${t("reads")} order by user_id, doc_id, at desc, read_sec desc, read desc
    on conflict (user_id, doc_id) do update set read_sec = excluded.read_sec, read = excluded.read,
      at = excluded.at
    where (excluded.at, excluded.read_sec, excluded.read) > (r.at, r.read_sec, r.read)`;
}
