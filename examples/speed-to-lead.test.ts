import { createFunil } from "@funil/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayUrl, ingestClient, newWorkspace, type Workspace, waitFor } from "../tests/helpers.js";
import { speedToLead } from "./speed-to-lead.js";

let ws: Workspace;
let ingest: Awaited<ReturnType<typeof ingestClient>>;

beforeAll(async () => {
  [ws, ingest] = await Promise.all([newWorkspace(), ingestClient()]);
});
afterAll(async () => {
  await ingest.close();
});

describe("examples/speed-to-lead", () => {
  it("counts only a team member's outbound touch (direction=outbound & actor=user), the first one", async () => {
    const funil = createFunil({ apiKey: ws.key, baseUrl: gatewayUrl() });
    const since = new Date(Date.now() - 1000);
    const lead = (name: string) =>
      funil.upsertContact({ body: { name, email: `${name}.${ws.id}@example.com` } });
    const [fast, slow, botOnly] = [await lead("fast"), await lead("slow"), await lead("bot")];
    const at = (c: { createdAt: string }, s: number) =>
      new Date(Date.parse(c.createdAt) + s * 1000).toISOString();
    let row = 0;
    const message = (c: { id: string }, sentAt: string, over: Record<string, unknown>) =>
      ingest.publish("ingest.inbox.message", {
        workspaceId: ws.id,
        rowId: `stl-${ws.id}-${++row}`,
        channel: "whatsapp",
        direction: "outbound",
        contactId: c.id,
        conversationId: `cv-${c.id}`,
        conversationAssigneeUserId: "owner-1",
        sentAt,
        preview: "hi",
        ...over,
      });
    await message(fast, at(fast, 5), { senderKind: "automation" });
    await message(fast, at(fast, 10), { direction: "inbound" });
    await message(fast, at(fast, 60), { senderUserId: "u1" });
    await message(fast, at(fast, 90), { senderUserId: "u2" });
    await message(slow, at(slow, 600), { senderUserId: "u1" });
    await message(botOnly, at(botOnly, 1), { senderKind: "ia" });
    await waitFor(async () => {
      const res = await funil.listInteractions({
        params: { query: { createdAfter: since.toISOString(), limit: 500 } },
      });
      return res.data.length === 6 || undefined;
    });

    const report = await speedToLead({ funil, since, pageSize: 2 });
    const of = (c: { id: string }) => report.rows.find((r) => r.contactId === c.id)!.seconds;
    expect(of(fast)).toBe(60);
    expect(of(slow)).toBe(600);
    expect(of(botOnly)).toBeNull();
    expect(report.untouched).toBe(1);
    expect(report.medianSeconds).toBe(330);
  });
});
