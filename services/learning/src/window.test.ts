import { describe, expect, it } from "vitest";
import { windowStart } from "./window.js";

describe("windowStart", () => {
  it("docs/api/learners.md §GET /platform/users: the window is the last `days` days, counted in 24 h days from now", () => {
    const now = new Date("2026-03-31T12:00:00.000Z");
    expect(windowStart(now, 30).toISOString()).toBe("2026-03-01T12:00:00.000Z");
    expect(windowStart(now, 1).toISOString()).toBe("2026-03-30T12:00:00.000Z");
  });
});
