import { describe, expect, it } from "vitest";
import { afterAttempt, judgeResponse } from "./schedule.js";

const SCHEDULE = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000];
const DAY = 86_400_000;
const now = new Date("2026-11-23T10:00:00.000Z");
const fail = { ok: false, status: 500, error: "receiver answered 500" };
const base = { scheduleMs: SCHEDULE, now, failingSince: null, windowMs: 3 * DAY };

describe("delivery outcomes (docs/api/webhooks.md §Retries, §Circuit breaker, §Scope revoked)", () => {
  it("docs/api/webhooks.md §Retries 2: retries after 1 m, 5 m, 30 m, 2 h, 12 h; dead after the 6th attempt", () => {
    const delays = [1, 2, 3, 4, 5].map((attempts) => afterAttempt({ ...base, attempts, result: fail }));
    expect(delays).toEqual(SCHEDULE.map((retryInMs) => ({ status: "pending", retryInMs })));
    expect(afterAttempt({ ...base, attempts: 6, result: fail })).toEqual({ status: "dead", breaker: false });
  });

  it("docs/api/webhooks.md §Retries: a success at any attempt delivers", () => {
    for (const attempts of [1, 6])
      expect(afterAttempt({ ...base, attempts, result: { ok: true, status: 200 } })).toEqual({
        status: "delivered",
      });
  });

  it("docs/api/webhooks.md §Circuit breaker 3: failing for 3 days without a success opens the breaker", () => {
    const since = (ms: number) => new Date(now.getTime() - ms);
    expect(afterAttempt({ ...base, attempts: 1, result: fail, failingSince: since(3 * DAY - 1) })).toEqual({
      status: "pending",
      retryInMs: 60_000,
    });
    expect(afterAttempt({ ...base, attempts: 1, result: fail, failingSince: since(3 * DAY) })).toEqual({
      status: "dead",
      breaker: true,
    });
    // A success never opens it, however long the failures lasted before.
    expect(
      afterAttempt({ ...base, attempts: 2, result: { ok: true, status: 204 }, failingSince: since(9 * DAY) }),
    ).toEqual({ status: "delivered" });
  });

  it("docs/api/webhooks.md §Retries 1: 2xx succeeds; 3xx (not followed) and every other status fail", () => {
    expect(judgeResponse(200).ok).toBe(true);
    expect(judgeResponse(299).ok).toBe(true);
    expect(judgeResponse(302)).toEqual({ ok: false, status: 302, error: "redirect 302 not followed" });
    expect(judgeResponse(404).ok).toBe(false);
    expect(judgeResponse(500)).toEqual({ ok: false, status: 500, error: "receiver answered 500" });
    expect(judgeResponse(100).ok).toBe(false);
  });
});
