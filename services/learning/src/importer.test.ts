import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { naming } from "@funil/config";
import { migrate, openDatabase, type Sql } from "@funil/db";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ImportError, importFile } from "./importer.js";
import { checkMessage } from "./messages.js";
import { learnerStore } from "./store/learners.js";
import { applyMessage } from "./store/platform.js";

/** The bulk import (docs/api/learners.md §Ingest) against a real database, with real files. */
let sql: Sql;
let dir: string;
const NOW = new Date("2026-11-22T12:00:00.000Z");
const since = new Date("2026-01-01T00:00:00.000Z");

const line = (subject: string, data: Record<string, unknown>) =>
  JSON.stringify({ subject: `platform.${subject}`, data });
const user = (id: string, name = `User ${id}`) =>
  line("user.upserted", { userId: id, name, email: `${id}@imp.io`, createdAt: "2026-01-01T00:00:00.000Z" });
const enroll = (id: string) =>
  line("enrollment.upserted", {
    userId: id,
    courseId: "c1",
    status: "active",
    progressPct: 10,
    startedAt: null,
    completedAt: null,
  });
const progress = (id: string, watchSec: number, at: string) =>
  line("lesson.progress", {
    userId: id,
    lessonId: "l1",
    courseId: "c1",
    watchSec,
    watchPct: Math.min(100, watchSec),
    completed: watchSec >= 100,
    at,
  });

async function file(name: string, lines: string[]) {
  const path = join(dir, name);
  await writeFile(path, `${lines.join("\n")}\n`);
  return path;
}
const counts = async () =>
  (
    await sql`select (select count(*)::int from users) as users, (select count(*)::int from lesson_progress) as progress`
  )[0];
const stagingTables = async () =>
  (await sql`select count(*)::int as n from pg_tables where tablename like 'import\\_%'`)[0]?.n;

beforeAll(async () => {
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    naming(`${process.env.FUNIL_TEST_ENV}_import`).database("learning"),
    { max: 4 },
  );
  await migrate(sql, fileURLToPath(new URL("../migrations", import.meta.url)));
  dir = await mkdtemp(join(tmpdir(), "funil-import-"));
});
beforeEach(async () => {
  await sql`truncate users, courses, lessons, enrollments, sessions, lesson_progress, certificates, library_docs, library_reads`;
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describe("npm run import:platform", () => {
  it("docs/api/learners.md §Ingest: imports every subject; cumulative lines keep the latest `at` even out of order; repeats change nothing", async () => {
    const path = await file("good.ndjson", [
      progress("u1", 100, "2026-11-20T00:00:00.000Z"),
      user("u1", "Old name"),
      enroll("u1"),
      progress("u1", 40, "2026-11-10T00:00:00.000Z"),
      "",
      user("u1", "New name"),
      line("session.opened", { userId: "u1", at: "2026-11-19T00:00:00.000Z", ip: "10.0.0.9" }),
      line("session.opened", { userId: "u1", at: "2026-11-01T00:00:00.000Z", ip: "10.0.0.1" }),
      line("session.seen", { userId: "u1", at: "2026-11-21T00:00:00.000Z" }),
      progress("u1", 40, "2026-11-10T00:00:00.000Z"),
    ]);
    const result = await importFile(sql, path);
    expect(result).toMatchObject({ lines: 10, imported: 9, rejected: 0 });
    const again = await importFile(sql, path);
    expect(again.imported).toBe(9);
    const learner = await learnerStore(sql).get("u1", 365, since);
    expect(learner).toMatchObject({
      name: "New name",
      access: {
        lastLoginAt: "2026-11-19T00:00:00.000Z",
        lastActiveAt: "2026-11-21T00:00:00.000Z",
        lastIp: "10.0.0.9",
        sessionsInWindow: 2,
      },
      lessons: [{ lessonId: "l1", watchSec: 100, completed: true, lastDate: "2026-11-20T00:00:00.000Z" }],
    });
    expect(await stagingTables()).toBe(0);
  });

  it("docs/api/learners.md §Ingest: an older file never rolls back what the live stream already applied", async () => {
    const newer = checkMessage(
      "platform.lesson.progress",
      JSON.parse(progress("u2", 90, "2026-11-21T00:00:00.000Z")).data,
    );
    if (!newer.ok) throw new Error("refused");
    await sql.begin((tx) => applyMessage(tx, newer.message));
    await importFile(
      sql,
      await file("older.ndjson", [user("u2"), enroll("u2"), progress("u2", 20, "2026-11-01T00:00:00.000Z")]),
    );
    const learner = await learnerStore(sql).get("u2", 365, since);
    expect(learner?.lessons).toMatchObject([{ watchSec: 90, lastDate: "2026-11-21T00:00:00.000Z" }]);
  });

  it("docs/api/learners.md §Ingest: a live write that deadlocks with the merge does not fail the import", async () => {
    const path = await file("contended.ndjson", [user("u5"), enroll("u5")]);
    const live = await sql.reserve();
    try {
      // The consumer's enrollment transaction: enrollments first, users second (store/platform.ts).
      await live`begin`;
      await live`insert into enrollments values ('u6', 'c1', 'active', 0, null, null)`;
      const importing = importFile(sql, path);
      // Once the merge holds users and waits for enrollments, the live transaction asks for users.
      for (;;) {
        const [waiting] = await sql`
          select 1 from pg_locks where not granted and relation = 'enrollments'::regclass`;
        if (waiting) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const liveInsert = live`insert into users (id, learner) values ('u6', true)`.then(
        () => live`commit`,
        async () => live`rollback`,
      );
      const result = await importing;
      await liveInsert;
      expect(result.imported).toBe(2);
      expect(await learnerStore(sql).get("u5", 30, NOW)).toMatchObject({ id: "u5" });
    } finally {
      live.release();
    }
  });

  it("docs/api/learners.md §Ingest: a bad line in the middle stops the import naming its line and field; nothing is imported", async () => {
    await importFile(sql, await file("before.ndjson", [user("u0"), enroll("u0")]));
    const before = await counts();
    const lines = [user("u3"), enroll("u3"), progress("u3", 10, "2026-11-01T00:00:00.000Z")];
    for (let i = 0; i < 20_000; i++) lines.push(progress(`bulk${i}`, i % 100, "2026-11-01T00:00:00.000Z"));
    lines.splice(10_000, 0, progress("u3", 10, "not a date"));
    const path = await file("bad.ndjson", lines);
    await expect(importFile(sql, path)).rejects.toThrow(
      new ImportError("line 10001: data.at: must be an ISO-8601 timestamp with offset"),
    );
    expect(await counts()).toEqual(before);
    expect(await stagingTables()).toBe(0);
  });

  it("docs/api/learners.md §Ingest: --skip-bad imports the good lines and writes each bad one, with its reason, to the rejects file", async () => {
    const path = await file("mixed.ndjson", [
      user("u4"),
      "{not json",
      enroll("u4"),
      line("session.opened", { userId: "u4", at: "2026-11-01T00:00:00.000Z", ip: "" }),
      line("nope.nope", {}),
    ]);
    const rejectsFile = join(dir, "rejects.ndjson");
    const result = await importFile(sql, path, { skipBad: true, rejectsFile });
    expect(result).toMatchObject({ lines: 5, imported: 2, rejected: 3, rejectsFile });
    const rejects = (await readFile(rejectsFile, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rejects.map((r) => [r.line, r.reason])).toEqual([
      [2, "line: is not valid JSON"],
      [4, "data.ip: must not be empty"],
      [5, 'subject: unknown subject "platform.nope.nope"'],
    ]);
    expect(rejects[0].raw).toBe("{not json");
    expect(await learnerStore(sql).get("u4", 30, NOW)).toMatchObject({ id: "u4" });
  });
});
