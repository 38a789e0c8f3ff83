import { fileURLToPath } from "node:url";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { createLogger, naming } from "@funil/config";
import {
  LearnerDetailSchema,
  LearnerSchema,
  LearnerService,
  type ListLearnersResponse,
} from "@funil/contracts";
import { migrate, openDatabase, type Sql } from "@funil/db";
import { describeError, encodedBytesOf, errorInterceptor, toApiJson } from "@funil/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkMessage } from "../messages.js";
import { learnerStore } from "../store/learners.js";
import { applyMessage } from "../store/platform.js";
import { learnerService } from "./learners.js";
import { routes } from "./routes.js";
import { learnerToProto } from "./wire.js";

/**
 * The learner handlers in-process (createRouterTransport) on a real
 * PostgreSQL database, fed with platform messages through the store the live
 * consumer uses. Every expected value is computed by hand from the messages.
 */
const NOW = new Date("2026-11-22T12:00:00.000Z");
let sql: Sql;
let client: ReturnType<typeof createClient<typeof LearnerService>>;

async function send(subject: string, data: Record<string, unknown>) {
  const checked = checkMessage(`platform.${subject}`, data);
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  await sql.begin((tx) => applyMessage(tx, checked.message));
}

const codeOf = async (p: Promise<unknown>) =>
  describeError(
    await p.then(
      () => undefined,
      (e) => e,
    ),
  ).code;
const list = async (req: Record<string, unknown> = {}) => {
  const res = await client.listLearners(req);
  return {
    ids: res.data.map((l) => l.id),
    data: res.data.map((l) => toApiJson(LearnerSchema, l)),
    next: res.nextCursor,
  };
};
const detail = async (id: string, days?: number) =>
  toApiJson(LearnerDetailSchema, (await client.getLearner({ id, ...(days ? { days } : {}) })).learner!);

const user = (userId: string, name: string, email: string, createdAt: string) =>
  send("user.upserted", { userId, name, email, createdAt });
const enroll = (userId: string, courseId: string, completedAt: string | null = null) =>
  send("enrollment.upserted", {
    userId,
    courseId,
    status: "active",
    progressPct: completedAt ? 100 : 40,
    startedAt: "2026-05-01T00:00:00.000Z",
    completedAt,
  });

async function feed() {
  await send("course.upserted", {
    courseId: "c1",
    title: "Vendas 101",
    lessons: [
      { lessonId: "l1", title: "Abertura" },
      { lessonId: "l2", title: "Fechamento" },
    ],
  });
  await send("course.upserted", { courseId: "c2", title: "CRM avançado", lessons: [] });
  await send("library.doc.upserted", { docId: "d1", title: "Guia" });
  await send("library.doc.upserted", { docId: "d2", title: "Checklist" });
  await user("u_ana", "Ana Conceição", "ana@plat.io", "2026-01-01T00:00:00.000Z");
  await user("u_bruno", "Bruno", "bruno@plat.io", "2026-02-01T00:00:00.000Z");
  await user("u_carla", "Carla", "carla@plat.io", "2026-03-01T00:00:00.000Z");
  await user("u_dan", "Dan", "dan@plat.io", "2026-04-01T00:00:00.000Z");
  await enroll("u_ana", "c1", "2026-06-01T00:00:00.000Z");
  await enroll("u_ana", "c2");
  await enroll("u_bruno", "c1");
  await enroll("u_carla", "c2");
  // An enrollment and a session for a user whose profile never arrived.
  await enroll("u_eve", "c1");
  await send("session.opened", { userId: "u_eve", at: "2026-11-20T00:00:00.000Z", ip: "10.9.9.9" });
  await send("certificate.issued", {
    userId: "u_ana",
    code: "CERT-1",
    courseId: "c1",
    courseTitle: "Vendas 101",
    issuedAt: "2026-06-02T00:00:00.000Z",
  });
  // The later session arrives first.
  await send("session.opened", {
    userId: "u_ana",
    at: "2026-11-20T12:00:00.000Z",
    ip: "10.0.0.2",
    sessionId: "s2",
  });
  await send("session.opened", {
    userId: "u_ana",
    at: "2026-11-01T00:00:00.000Z",
    ip: "10.0.0.1",
    sessionId: "s1",
  });
  await send("session.seen", { userId: "u_ana", at: "2026-11-21T12:00:00.000Z" });
  await send("session.seen", { userId: "u_ana", at: "2026-11-02T00:00:00.000Z" });
  // Carla's only activity is exactly at the activeSince edge below.
  await send("session.opened", { userId: "u_carla", at: "2026-11-15T00:00:00.000Z", ip: "10.0.0.3" });
  const progress = (lessonId: string, watchSec: number, watchPct: number, completed: boolean, at: string) =>
    send("lesson.progress", { userId: "u_ana", lessonId, courseId: "c1", watchSec, watchPct, completed, at });
  await progress("l1", 300, 100, true, "2026-11-20T00:00:00.000Z");
  await progress("l1", 100, 30, false, "2026-11-10T00:00:00.000Z"); // older, arrives late: ignored
  await progress("l2", 50, 10, false, "2026-09-01T00:00:00.000Z");
  await send("library.read", {
    userId: "u_ana",
    docId: "d1",
    readSec: 60,
    read: true,
    at: "2026-11-21T00:00:00.000Z",
  });
  // Exactly 30 days before NOW: the edge of the default window, inside it.
  await send("library.read", {
    userId: "u_ana",
    docId: "d2",
    readSec: 5,
    read: false,
    at: "2026-10-23T12:00:00.000Z",
  });
}

beforeAll(async () => {
  const names = naming(`${process.env.FUNIL_TEST_ENV}_rpc`);
  sql = await openDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    names.database("learning"),
  );
  await migrate(sql, fileURLToPath(new URL("../../migrations", import.meta.url)));
  await sql`truncate users, courses, lessons, enrollments, sessions, lesson_progress, certificates, library_docs, library_reads`;
  client = createClient(
    LearnerService,
    createRouterTransport(routes({ learners: learnerStore(sql), clock: { now: () => NOW } }), {
      router: { interceptors: [errorInterceptor(createLogger("learning-test", "silent"))] },
    }),
  );
  await feed();
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
});

describe("ListLearners", () => {
  it("docs/api/learners.md §GET /platform/users: only users with an enrollment and a profile, ordered by (createdAt, id), all-time counters", async () => {
    const { ids, data, next } = await list();
    expect(ids).toEqual(["u_ana", "u_bruno", "u_carla"]);
    expect(next).toBeUndefined();
    expect(data[0]).toEqual({
      id: "u_ana",
      name: "Ana Conceição",
      email: "ana@plat.io",
      createdAt: "2026-01-01T00:00:00.000Z",
      lastLoginAt: "2026-11-20T12:00:00.000Z",
      lastActiveAt: "2026-11-21T12:00:00.000Z",
      enrolledCourses: 2,
      completedCourses: 1,
      certificates: 1,
    });
    expect(data[1]).toMatchObject({
      lastLoginAt: null,
      lastActiveAt: null,
      enrolledCourses: 1,
      completedCourses: 0,
    });
  });

  it("docs/api/learners.md §GET /platform/users: q matches name or e-mail, contains, case- and accent-insensitive", async () => {
    expect((await list({ q: "CONCEICAO" })).ids).toEqual(["u_ana"]);
    expect((await list({ q: "ção" })).ids).toEqual(["u_ana"]);
    expect((await list({ q: "@PLAT.IO" })).ids).toEqual(["u_ana", "u_bruno", "u_carla"]);
    expect((await list({ q: "%" })).ids).toEqual([]);
  });

  it("docs/api/learners.md §GET /platform/users: activeSince is >=, activeBefore is <, never-logged-in matches neither", async () => {
    expect((await list({ activeSince: "2026-11-15T00:00:00.000Z" })).ids).toEqual(["u_ana", "u_carla"]);
    expect((await list({ activeSince: "2026-11-15T00:00:00.001Z" })).ids).toEqual(["u_ana"]);
    expect((await list({ activeBefore: "2026-11-15T00:00:00.000Z" })).ids).toEqual([]);
    expect((await list({ activeBefore: "2026-11-15T00:00:00.001Z" })).ids).toEqual(["u_carla"]);
    expect((await list({ activeBefore: "2030-01-01T00:00:00Z" })).ids).toEqual(["u_ana", "u_carla"]);
  });

  it("docs/api/learners.md §GET /platform/users: keyset pages over (createdAt, id); a cursor is bound to its filters", async () => {
    const first = await list({ limit: 2 });
    expect(first.ids).toEqual(["u_ana", "u_bruno"]);
    const second = await list({ limit: 2, cursor: first.next });
    expect(second).toMatchObject({ ids: ["u_carla"], next: undefined });
    expect(await codeOf(client.listLearners({ cursor: first.next, q: "a" }))).toBe("invalid_cursor");
    expect(await codeOf(client.listLearners({ cursor: "garbage" }))).toBe("invalid_cursor");
  });

  it("pages are written from raw rows (packages/rpc row-pages.ts), the object path's page as bytes", async () => {
    const impl = learnerService({ learners: learnerStore(sql), clock: { now: () => NOW } });
    for (const req of [{ limit: 2 }, { q: "conceicao" }, { activeSince: "2026-11-01T00:00:00.000Z" }]) {
      const page = (await impl.listLearners(req as never, {} as never)) as ListLearnersResponse;
      expect(encodedBytesOf(page)).toBeDefined();
      expect(page.data.map((l) => toApiJson(LearnerSchema, l))).toEqual((await list(req)).data);
    }
    const objects = await learnerStore(sql).list({}, 10);
    const page = (await impl.listLearners({} as never, {} as never)) as ListLearnersResponse;
    expect(page.data.map((l) => toApiJson(LearnerSchema, l))).toEqual(
      objects.map((r) => toApiJson(LearnerSchema, learnerToProto(r))),
    );
  });

  it("docs/api/conventions.md §Errors: bad filters are validation_failed, as over HTTP", async () => {
    expect(await codeOf(client.listLearners({ limit: 501 }))).toBe("validation_failed");
    expect(await codeOf(client.listLearners({ activeSince: "yesterday" }))).toBe("validation_failed");
    expect(await codeOf(client.listLearners({ q: "x".repeat(201) }))).toBe("validation_failed");
  });
});

describe("GetLearner", () => {
  it("docs/api/learners.md §GET /platform/users: access all-time, sessions and lessons/library in the 30-day default window", async () => {
    expect(await detail("u_ana")).toEqual({
      id: "u_ana",
      name: "Ana Conceição",
      email: "ana@plat.io",
      createdAt: "2026-01-01T00:00:00.000Z",
      windowDays: 30,
      access: {
        lastLoginAt: "2026-11-20T12:00:00.000Z",
        lastActiveAt: "2026-11-21T12:00:00.000Z",
        sessionsInWindow: 2,
        lastIp: "10.0.0.2",
      },
      courses: [
        {
          courseId: "c1",
          courseTitle: "Vendas 101",
          status: "active",
          progressPct: 100,
          startedAt: "2026-05-01T00:00:00.000Z",
          completedAt: "2026-06-01T00:00:00.000Z",
        },
        {
          courseId: "c2",
          courseTitle: "CRM avançado",
          status: "active",
          progressPct: 40,
          startedAt: "2026-05-01T00:00:00.000Z",
          completedAt: null,
        },
      ],
      lessons: [
        {
          lessonId: "l1",
          title: "Abertura",
          courseTitle: "Vendas 101",
          watchSec: 300,
          watchPct: 100,
          completed: true,
          lastDate: "2026-11-20T00:00:00.000Z",
        },
      ],
      certificates: [
        { code: "CERT-1", courseId: "c1", courseTitle: "Vendas 101", issuedAt: "2026-06-02T00:00:00.000Z" },
      ],
      library: [
        { docId: "d1", title: "Guia", readSec: 60, read: true, lastDate: "2026-11-21T00:00:00.000Z" },
        { docId: "d2", title: "Checklist", readSec: 5, read: false, lastDate: "2026-10-23T12:00:00.000Z" },
      ],
    });
  });

  it("docs/api/learners.md §GET /platform/users/{id}: days sets windowDays and the window of sessions, lessons and library only", async () => {
    const week = await detail("u_ana", 7);
    expect(week).toMatchObject({ windowDays: 7, access: { sessionsInWindow: 1, lastIp: "10.0.0.2" } });
    expect(week.library).toHaveLength(1);
    expect(week.courses).toHaveLength(2);
    expect(week.certificates).toHaveLength(1);
    const quarter = await detail("u_ana", 90);
    expect((quarter.lessons as Array<{ lessonId: string }>).map((l) => l.lessonId)).toEqual(["l1", "l2"]);
  });

  it("docs/api/learners.md §GET /platform/users: a never-logged-in learner has null access stamps and no sessions", async () => {
    expect((await detail("u_bruno")).access).toEqual({
      lastLoginAt: null,
      lastActiveAt: null,
      sessionsInWindow: 0,
      lastIp: null,
    });
  });

  it("docs/api/conventions.md §Errors: 404 for an unknown user, a user without enrollment, or one whose profile never arrived", async () => {
    for (const id of ["nobody", "u_dan", "u_eve"])
      expect(await codeOf(client.getLearner({ id }))).toBe("not_found");
  });

  it("docs/api/learners.md §GET /platform/users/{id}: days outside 1..365 is validation_failed", async () => {
    for (const days of [0, 366, -1])
      expect(await codeOf(client.getLearner({ id: "u_ana", days }))).toBe("validation_failed");
  });

  it("docs/api/learners.md §GET /platform/users/{id}: messages applied again change nothing (idempotent upserts)", async () => {
    const before = { list: await list(), ana: await detail("u_ana") };
    await feed();
    expect(await list()).toEqual(before.list);
    expect(await detail("u_ana")).toEqual(before.ana);
  });
});
