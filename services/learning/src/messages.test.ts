import { describe, expect, it } from "vitest";
import { checkMessage, fold } from "./messages.js";

const progress = {
  userId: "u1",
  lessonId: "l1",
  courseId: "c1",
  watchSec: 120,
  watchPct: 40,
  completed: false,
  at: "2026-11-20T10:00:00-03:00",
};

describe("platform messages (docs/api/learners.md §Ingest)", () => {
  it("docs/api/learners.md §Ingest: a lesson.progress message is checked, its timestamps read as instants", () => {
    const r = checkMessage("platform.lesson.progress", progress);
    expect(r.ok).toBe(true);
    if (r.ok)
      expect(r.message.data).toMatchObject({ watchPct: 40, at: new Date("2026-11-20T13:00:00.000Z") });
  });

  it("docs/api/learners.md §Ingest: a bad field is refused naming it under data.", () => {
    const r = checkMessage("platform.lesson.progress", { ...progress, watchPct: 101, at: "yesterday" });
    expect(r).toEqual({
      ok: false,
      problems: [
        { path: "data.watchPct", message: "must be <= 100" },
        { path: "data.at", message: "must be an ISO-8601 timestamp with offset" },
      ],
    });
  });

  it("docs/api/learners.md §Ingest: an unknown subject and a missing field are refused", () => {
    expect(checkMessage("platform.nope", {})).toMatchObject({ ok: false, problems: [{ path: "subject" }] });
    const r = checkMessage("platform.session.opened", { userId: "u1", at: "2026-11-20T10:00:00Z" });
    expect(r).toMatchObject({ ok: false, problems: [{ path: "data.ip" }] });
  });

  it("docs/api/learners.md §Ingest: session.opened needs an ip stamp; sessionId is optional; extra fields are ignored", () => {
    const base = { userId: "u1", at: "2026-11-20T10:00:00Z" };
    expect(checkMessage("platform.session.opened", { ...base, ip: "" }).ok).toBe(false);
    expect(checkMessage("platform.session.opened", { ...base, ip: "2001:db8::1", extra: 1 }).ok).toBe(true);
    expect(checkMessage("platform.session.opened", { ...base, ip: "10.0.0.1", sessionId: "s1" }).ok).toBe(
      true,
    );
  });

  it("docs/api/learners.md §Ingest: enrollment dates may be null (not started, not completed)", () => {
    const r = checkMessage("platform.enrollment.upserted", {
      userId: "u1",
      courseId: "c1",
      status: "active",
      progressPct: 0,
      startedAt: null,
      completedAt: null,
    });
    expect(r.ok).toBe(true);
  });
});

describe("fold", () => {
  it("docs/api/learners.md §GET /platform/users: q is case- and accent-insensitive", () => {
    expect(fold("JOÃO Conceição")).toBe("joao conceicao");
  });
});
