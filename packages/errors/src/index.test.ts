import { describe, expect, it } from "vitest";
import { DomainError, ERROR_CODES, invalid, Problems } from "./index.js";

describe("domain errors (docs/api/conventions.md §Errors)", () => {
  it("every code answers with its documented status", () => {
    expect(new DomainError("slot_taken", "x").status).toBe(409);
    expect(new DomainError("daily_cap_reached", "x").status).toBe(422);
    expect(ERROR_CODES.unavailable).toBe(503);
  });

  it("validation_failed names every problem, in one message format", () => {
    const p = new Problems("body").add("title", "must not be empty").add("tags", "at most 100 tags");
    let err: unknown;
    try {
      p.throwIfAny();
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({
      code: "validation_failed",
      message: "invalid body: body.title must not be empty",
      details: [
        { path: "body.title", message: "must not be empty" },
        { path: "body.tags", message: "at most 100 tags" },
      ],
    });
    expect(invalid([{ path: "limit", message: "too big" }]).message).toBe("invalid request: limit too big");
    expect(() => new Problems().throwIfAny()).not.toThrow();
  });
});
