import { describe, expect, it } from "vitest";
import { applyDealPatch, newDeal } from "./deals.js";

const t0 = new Date("2026-01-01T00:00:00.000Z");
const t1 = new Date("2026-01-02T00:00:00.000Z");
const base = { contactId: "ct_1", pipelineId: "pl_1", title: "Deal" };

describe("newDeal", () => {
  it("docs/api/deals.md §POST /opportunities: source falls back to utmSource, else null", () => {
    expect(newDeal({ ...base, source: "lp", utmSource: "google" }, "stg_1", t0).source).toBe("lp");
    expect(newDeal({ ...base, utmSource: "google" }, "stg_1", t0).source).toBe("google");
    expect(newDeal({ ...base, source: "  ", utmSource: "" }, "stg_1", t0).source).toBeNull();
    expect(newDeal(base, "stg_1", t0).source).toBeNull();
  });

  it("docs/api/deals.md §Deal (opportunity): utm holds this request's values only; status open, stageChangedAt = creation", () => {
    const d = newDeal({ ...base, utmSource: "g", utmCampaign: "bf", utmContent: "" }, "stg_2", t0);
    expect(d.utm).toEqual({ source: "g", campaign: "bf" });
    expect(d).toMatchObject({
      status: "open",
      stageId: "stg_2",
      stageChangedAt: t0,
      wonAt: null,
      lostAt: null,
    });
    expect(d.currency).toBe("BRL");
    expect(d.valueCents).toBe(0);
  });
});

describe("applyDealPatch", () => {
  const current = newDeal(base, "stg_1", t0);

  it("docs/api/deals.md §PATCH /opportunities/{id}: a stage change moves stageChangedAt and emits stage_changed; the same stage changes nothing", () => {
    const { next, events } = applyDealPatch(current, { stageId: "stg_2" }, t1);
    expect(next.stageChangedAt).toEqual(t1);
    expect(events).toEqual(["opportunity.updated", "opportunity.stage_changed"]);
    expect(applyDealPatch(current, { stageId: "stg_1" }, t1).events).toEqual([]);
  });

  it("docs/api/deals.md §PATCH /opportunities/{id}: won sets wonAt, lost sets lostAt and clears wonAt, open clears both", () => {
    const won = applyDealPatch(current, { status: "won" }, t1);
    expect(won.next).toMatchObject({ status: "won", wonAt: t1, lostAt: null });
    expect(won.events).toContain("opportunity.won");
    const lost = applyDealPatch(won.next, { status: "lost", lossReason: "price" }, t0);
    expect(lost.next).toMatchObject({ status: "lost", wonAt: null, lostAt: t0, lossReason: "price" });
    expect(lost.events).toContain("opportunity.lost");
    const open = applyDealPatch(lost.next, { status: "open" }, t1);
    expect(open.next).toMatchObject({ status: "open", wonAt: null, lostAt: null, lossReason: "price" });
    expect(open.events).toEqual(["opportunity.updated"]);
    expect(applyDealPatch(won.next, { status: "won" }, t0)).toEqual({ next: won.next, events: [] });
  });

  it("docs/api/deals.md §PATCH /opportunities/{id}: null clears, tags replaced, customFields and utm merged key by key", () => {
    const start = {
      ...current,
      temperature: "hot",
      tags: ["a"],
      customFields: { x: 1, y: 2 },
      utm: { source: "g" },
    };
    const { next } = applyDealPatch(
      start,
      {
        temperature: null,
        tags: ["b", "b"],
        customFields: { x: null, z: 3 },
        utm: { source: null, medium: "cpc" },
      },
      t1,
    );
    expect(next).toMatchObject({
      temperature: null,
      tags: ["b"],
      customFields: { y: 2, z: 3 },
      utm: { medium: "cpc" },
    });
  });
});
