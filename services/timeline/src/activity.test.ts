import { describe, expect, it } from "vitest";
import { ledgerItemOf } from "./activity.js";

const deal = { id: "d1", contactId: "c1", createdAt: "2024-01-01T00:00:00.000Z", title: "x" };
const event = (type: string, data: object) => ({
  id: `evt_${type}`,
  type,
  workspaceId: "ws1",
  occurredAt: "2024-01-02T00:00:00.000Z",
  data,
});

describe("activity ledger (docs/api/deals.md §GET /opportunities/{id} lastActivityAt)", () => {
  it("a deal's creation makes it known but is not an activity", () => {
    expect(ledgerItemOf(event("opportunity.created", deal))).toEqual({
      deal: { workspaceId: "ws1", id: "d1", contactId: "c1", createdAt: new Date(deal.createdAt) },
    });
  });

  it("every other action on a deal is an activity of it", () => {
    for (const type of [
      "opportunity.updated",
      "opportunity.stage_changed",
      "opportunity.won",
      "opportunity.lost",
    ])
      expect(ledgerItemOf(event(type, deal)).activity).toEqual({
        eventId: `evt_${type}`,
        workspaceId: "ws1",
        opportunityId: "d1",
        type,
        targetId: "d1",
        at: new Date("2024-01-02T00:00:00.000Z"),
      });
  });

  it("tasks, notes and meetings count for the deal they belong to, and only then", () => {
    for (const type of [
      "task.created",
      "task.updated",
      "note.created",
      "meeting.booked",
      "meeting.outcome",
    ]) {
      expect(ledgerItemOf(event(type, { id: "x1", opportunityId: "d1" })).activity).toMatchObject({
        opportunityId: "d1",
        targetId: "x1",
        type,
      });
      expect(ledgerItemOf(event(type, { id: "x1", opportunityId: null }))).toEqual({});
    }
  });

  it("events about other things are not in the ledger", () => {
    expect(ledgerItemOf(event("contact.updated", { id: "c1" }))).toEqual({});
    expect(ledgerItemOf(event("pipeline.created", { id: "p1" }))).toEqual({});
    expect(ledgerItemOf(event("webhook.something", { no: "id" }))).toEqual({});
  });
});
