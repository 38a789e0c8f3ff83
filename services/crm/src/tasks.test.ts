import { describe, expect, it } from "vitest";
import { applyTaskPatch, newTask, sameTask } from "./tasks.js";

const t0 = new Date("2026-01-01T00:00:00.000Z");
const t1 = new Date("2026-01-02T00:00:00.000Z");

describe("tasks", () => {
  it("docs/api/deals.md §Task: completed true sets completedAt (kept when already set), false clears it", () => {
    const task = newTask({ title: "x" }, t0);
    expect(task.completedAt).toBeNull();
    const done = applyTaskPatch(task, { completed: true }, t0);
    expect(done.completedAt).toEqual(t0);
    expect(applyTaskPatch(done, { completed: true }, t1).completedAt).toEqual(t0);
    expect(applyTaskPatch(done, { completed: false }, t1).completedAt).toBeNull();
  });

  it("docs/api/deals.md §Task: absent = untouched, null = cleared", () => {
    const task = newTask({ title: "x", body: "b", dueAt: t1, assigneeUserId: "usr_1" }, t0);
    const next = applyTaskPatch(task, { body: null, title: "y" }, t1);
    expect(next).toMatchObject({ title: "y", body: null, dueAt: t1, assigneeUserId: "usr_1" });
    expect(sameTask(task, applyTaskPatch(task, {}, t1))).toBe(true);
    expect(sameTask(task, next)).toBe(false);
  });
});
