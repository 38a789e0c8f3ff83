import { createFunil } from "@funil/client";
import { beforeAll, describe, expect, it } from "vitest";
import { calendar } from "../tests/e2e/scheduling-fixtures.js";
import { gatewayUrl, newWorkspace, type Workspace } from "../tests/helpers.js";
import { bookFirstSlot } from "./book-first-slot.js";

let ws: Workspace;

beforeAll(async () => {
  ws = await newWorkspace();
});

describe("examples/book-first-slot", () => {
  it("books the calendar's first free slot, and the next booking the next free one", async () => {
    const funil = createFunil({ apiKey: ws.key, baseUrl: gatewayUrl() });
    const cal = await calendar(ws, { assigneeUserIds: undefined });
    const [slot] = (await funil.listCalendarSlots({ params: { path: { id: cal.id }, query: { limit: 1 } } }))
      .data;
    const a = await funil.upsertContact({ body: { name: "A", email: `a.${ws.id}@example.com` } });
    const b = await funil.upsertContact({ body: { name: "B", email: `b.${ws.id}@example.com` } });
    const first = await bookFirstSlot({ funil, calendarId: cal.id, contactId: a.id, title: "Demo" });
    expect(first.startAt).toBe(slot!.startAt);
    expect(first.assigneeUserId).toBe(slot!.assigneeUserId);
    const second = await bookFirstSlot({ funil, calendarId: cal.id, contactId: b.id });
    // The other assignee is free at the same time; else the next slot.
    expect([second.startAt, second.assigneeUserId]).not.toEqual([first.startAt, first.assigneeUserId]);
    expect(Date.parse(second.startAt)).toBeGreaterThanOrEqual(Date.parse(first.startAt));
  });
});
