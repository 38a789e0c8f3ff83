import { describe, expect, it } from "vitest";
import { checkRange, summarize } from "./funnel.js";

const t = (n: number) => ({ count: n, valueCents: n * 100 });

describe("funnel", () => {
  it("docs/api/deals.md §GET /funnel: the total is the sum of byStatus; the range is echoed, null when open", () => {
    const s = summarize({ from: new Date("2026-01-01T00:00:00Z") }, undefined, {
      stages: [{ stageId: "s1", name: "A", ...t(3) }],
      byStatus: { open: t(1), won: t(1), lost: t(1) },
      closedInRange: { won: t(2), lost: t(0) },
    });
    expect(s.total).toEqual(t(3));
    expect(s.from).toBe("2026-01-01T00:00:00.000Z");
    expect(s.to).toBeNull();
    expect(s.pipelineId).toBeNull();
  });

  it("docs/api/conventions.md §Errors: from later than to is a validation problem; equal bounds are an empty range", () => {
    const a = new Date("2026-01-02T00:00:00Z");
    const b = new Date("2026-01-01T00:00:00Z");
    expect(checkRange({ from: a, to: b })).toHaveLength(1);
    expect(checkRange({ from: a, to: a })).toEqual([]);
    expect(checkRange({})).toEqual([]);
  });
});
