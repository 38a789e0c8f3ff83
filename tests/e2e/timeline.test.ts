import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type GatewayCopy,
  gatewayCopy,
  ingestClient,
  keyFor,
  newWorkspace,
  request,
  type Workspace,
  waitFor,
} from "../helpers.js";

/**
 * The timeline end to end: interactions published on INGEST (and notes written
 * through crm) read back through the gateway, with the touch and activity
 * fields of the single reads.
 */
let ingest: Awaited<ReturnType<typeof ingestClient>>;
beforeAll(async () => {
  ingest = await ingestClient();
});
afterAll(async () => {
  await ingest?.close();
});

let n = 0;
const uniq = (p: string) => `${p}${Date.now().toString(36)}${++n}`;

async function contactIn(ws: Workspace) {
  const phone = `+55 11 9${String(Date.now() % 1e8).padStart(8, "0")}${++n}`;
  const res = await ws.call("POST", "/contacts", { name: "Lead", phone });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** The contact's timeline once it holds `count` interactions (ingest is asynchronous). */
async function timeline(ws: Workspace, query: string, count: number) {
  let last: { length: number; body: unknown } = { length: -1, body: undefined };
  try {
    return await waitFor(async () => {
      const res = await ws.call("GET", `/interactions?${query}`);
      last = { length: res.body?.data?.length, body: res.body };
      // biome-ignore lint/suspicious/noExplicitAny: JSON bodies
      return last.length === count ? (res.body as { data: any[]; nextCursor: string | null }) : undefined;
    });
  } catch {
    throw new Error(`expected ${count} interactions for ${query}, last saw ${JSON.stringify(last.body)}`);
  }
}

function message(ws: Workspace, contactId: string, over: Record<string, unknown>) {
  return {
    workspaceId: ws.id,
    rowId: uniq("m"),
    channel: "whatsapp",
    direction: "outbound",
    contactId,
    conversationId: `cv-${contactId}`,
    conversationAssigneeUserId: "owner-1",
    channelInstanceId: "inst-1",
    senderPhone: "+5511900000000",
    sentAt: "2026-01-10T10:00:00.000Z",
    preview: "hi",
    ...over,
  };
}

describe("timeline ingest and GET /interactions (docs/api/interactions.md §Interaction, §Ingest)", () => {
  let ws: Workspace;
  let contactId: string;
  beforeAll(async () => {
    ws = await newWorkspace();
    contactId = await contactIn(ws);
    const at = (m: number) => `2026-01-10T10:${String(m).padStart(2, "0")}:00.000Z`;
    const base = { workspaceId: ws.id, contactId };
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { rowId: "a1", direction: "inbound", sentAt: at(1) }),
    );
    // Same time as a1: the id decides (descending).
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { rowId: "a7", direction: "inbound", sentAt: at(1) }),
    );
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { rowId: "a2", senderUserId: "u1", sentAt: at(2) }),
    );
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { rowId: "a3", channel: "instagram", senderKind: "ia", sentAt: at(3) }),
    );
    await ingest.publish("ingest.inbox.message", message(ws, contactId, { rowId: "a4", sentAt: at(4) }));
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, {
        rowId: "a5",
        imported: true,
        legacySource: "bulk",
        sentAt: "2019-05-05T05:05:05.000Z",
      }),
    );
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { rowId: "a6", marker: "agent_assigned", sentAt: at(6) }),
    );
    await ingest.publish("ingest.call", {
      ...base,
      rowId: "c1",
      direction: "outbound",
      userId: "u2",
      startedAt: at(5),
      durationSec: 42,
      status: "answered",
    });
    await ingest.publish("ingest.email", {
      ...base,
      rowId: "e1",
      direction: "outbound",
      kind: "automation",
      sentAt: at(7),
      preview: "Welcome",
    });
    await ingest.publish("ingest.email", {
      ...base,
      rowId: "e2",
      direction: "outbound",
      kind: "campaign",
      sentAt: at(8),
      preview: "Promo",
    });
    // The same row twice: stored once (docs/api/interactions.md §Ingest).
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { rowId: "a2", senderUserId: "u1", sentAt: at(2) }),
    );
    await timeline(ws, `contactId=${contactId}`, 8);
  });

  it("rules 1, 2, 11: every source, createdAt desc then id desc; markers and campaigns left out; duplicates once", async () => {
    const { data, nextCursor } = await timeline(ws, `contactId=${contactId}`, 8);
    expect(data.map((i) => i.id)).toEqual([
      "email:e1",
      "call:c1",
      "msg:a4",
      "msg:a3",
      "msg:a2",
      "msg:a7",
      "msg:a1",
      "msg:a5",
    ]);
    expect(nextCursor).toBeNull();
  });

  it("rules 4–10: actor and userId per interaction; the assignee never becomes the sender", async () => {
    const { data } = await timeline(ws, `contactId=${contactId}`, 8);
    const byId = Object.fromEntries(data.map((i) => [i.id, i]));
    expect(byId["msg:a1"]).toMatchObject({ direction: "inbound", actor: "contact", userId: null });
    expect(byId["msg:a2"]).toMatchObject({
      actor: "user",
      userId: "u1",
      conversationAssigneeUserId: "owner-1",
    });
    expect(byId["msg:a3"]).toMatchObject({ actor: "ia", userId: null, channel: "instagram" });
    expect(byId["msg:a4"]).toMatchObject({ actor: "unknown", userId: null });
    expect(byId["msg:a5"]).toMatchObject({ actor: "automation", userId: null });
    expect(byId["call:c1"]).toMatchObject({
      actor: "user",
      userId: "u2",
      channel: "call",
      durationSec: 42,
      status: "answered",
    });
    expect(byId["email:e1"]).toMatchObject({ actor: "automation", userId: null, channel: "email" });
  });

  it("rule 3: an inbox message's createdAt is the provider's send date; imported history keeps its date", async () => {
    const { data } = await timeline(ws, `contactId=${contactId}`, 8);
    const byId = Object.fromEntries(data.map((i) => [i.id, i]));
    expect(byId["msg:a2"].createdAt).toBe("2026-01-10T10:02:00.000Z");
    expect(byId["msg:a5"].createdAt).toBe("2019-05-05T05:05:05.000Z");
  });

  it("docs/api/interactions.md §Interaction: channelInstanceId and senderPhone only on inbox messages with a connection", async () => {
    const { data } = await timeline(ws, `contactId=${contactId}`, 8);
    const byId = Object.fromEntries(data.map((i) => [i.id, i]));
    expect(byId["msg:a2"]).toMatchObject({ channelInstanceId: "inst-1", senderPhone: "+5511900000000" });
    expect(byId["call:c1"]).toMatchObject({
      channelInstanceId: null,
      senderPhone: null,
      conversationId: null,
    });
    expect(byId["email:e1"]).toMatchObject({ channelInstanceId: null, senderPhone: null });
  });

  it("docs/api/interactions.md §GET /interactions: filters userId, channel list, direction, actor; rule 12: direction=outbound&actor=user", async () => {
    const ids = async (q: string) =>
      (await ws.call("GET", `/interactions?contactId=${contactId}&${q}`)).body.data.map(
        (i: { id: string }) => i.id,
      );
    expect(await ids("userId=u1")).toEqual(["msg:a2"]);
    expect(await ids("channel=call,instagram")).toEqual(["call:c1", "msg:a3"]);
    expect(await ids("channel=email")).toEqual(["email:e1"]);
    expect(await ids("direction=inbound")).toEqual(["msg:a7", "msg:a1"]);
    expect(await ids("actor=unknown")).toEqual(["msg:a4"]);
    expect(await ids("direction=outbound&actor=user")).toEqual(["call:c1", "msg:a2"]);
  });

  it("docs/api/interactions.md §GET /interactions: createdAfter and createdBefore are both exclusive", async () => {
    const res = await ws.call(
      "GET",
      `/interactions?contactId=${contactId}&createdAfter=2026-01-10T10:02:00.000Z&createdBefore=2026-01-10T10:05:00.000Z`,
    );
    expect(res.body.data.map((i: { id: string }) => i.id)).toEqual(["msg:a4", "msg:a3"]);
  });

  it("docs/api/conventions.md §Lists and pagination: keyset pages in order, the cursor bound to its filters", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { body: { data: { id: string }[]; nextCursor: string | null } } = await ws.call(
        "GET",
        `/interactions?contactId=${contactId}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      seen.push(...res.body.data.map((i) => i.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toEqual(["email:e1", "call:c1", "msg:a4", "msg:a3", "msg:a2", "msg:a7", "msg:a1", "msg:a5"]);
    const first = await ws.call("GET", `/interactions?contactId=${contactId}&limit=2`);
    const other = await ws.call(
      "GET",
      `/interactions?contactId=${contactId}&actor=user&cursor=${first.body.nextCursor}`,
    );
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe("invalid_cursor");
  });

  it("docs/api/conventions.md §Limits: default limit 100; another workspace sees none of it", async () => {
    const other = await newWorkspace();
    const res = await other.call("GET", `/interactions?contactId=${contactId}`);
    expect(res.body).toEqual({ data: [], nextCursor: null });
  });

  it("docs/api/interactions.md §GET /interactions; docs/api/conventions.md §Limits: bad filters are a 400 validation_failed; without interactions.read a 403", async () => {
    for (const q of [
      "limit=0",
      "limit=501",
      "channel=sms",
      "channel=",
      `channel=${"email,".repeat(30)}email`,
      "direction=sideways",
      "actor=robot",
      `contactId=${"x".repeat(81)}`,
      `userId=${"x".repeat(81)}`,
      "createdAfter=yesterday",
      "foo=1",
    ]) {
      const res = await ws.call("GET", `/interactions?${q}`);
      expect([q, res.status, res.body.error?.code]).toEqual([q, 400, "validation_failed"]);
    }
    const noScope = await keyFor(ws, ["contacts.read"]);
    const res = await noScope.call("GET", "/interactions");
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("missing_scope");
  });
});

describe("reassignments and refused messages (docs/api/interactions.md §Ingest)", () => {
  it("every interaction of a conversation shows its new owner; the sender's userId never changes; a stale assignment is ignored", async () => {
    const ws = await newWorkspace();
    const contactId = await contactIn(ws);
    const conversationId = uniq("cv");
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { conversationId, senderUserId: "u1" }),
    );
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { conversationId, direction: "inbound", sentAt: "2026-01-10T10:01:00.000Z" }),
    );
    await timeline(ws, `contactId=${contactId}`, 2);
    const assign = (assigneeUserId: string, at: string) =>
      ingest.publish("ingest.inbox.conversation_assigned", {
        workspaceId: ws.id,
        conversationId,
        assigneeUserId,
        at,
      });
    await assign("owner-2", "2026-01-11T00:00:00.000Z");
    await assign("owner-0", "2026-01-10T12:00:00.000Z"); // older: arrives late, changes nothing
    await expect
      .poll(async () => {
        const res = await ws.call("GET", `/interactions?contactId=${contactId}`);
        return res.body.data.map((i: { conversationAssigneeUserId: string; userId: string }) => [
          i.conversationAssigneeUserId,
          i.userId,
        ]);
      })
      .toEqual([
        ["owner-2", null],
        ["owner-2", "u1"],
      ]);
    // A sync marker so the stale assignment has been handled before the last look.
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { conversationId, sentAt: "2026-01-09T00:00:00.000Z" }),
    );
    const after = await timeline(ws, `contactId=${contactId}`, 3);
    expect(after.data.map((i) => i.conversationAssigneeUserId)).toEqual(["owner-2", "owner-2", "owner-2"]);
  });

  it("a malformed message goes to the dead letters with its reason and does not block the ones after it", async () => {
    const since = new Date(Date.now() - 1000);
    const ws = await newWorkspace();
    const contactId = await contactIn(ws);
    const tag = uniq("bad");
    await ingest.publish("ingest.call", { workspaceId: ws.id, rowId: tag, contactId, direction: "up" });
    await ingest.publish("ingest.call", `{"not json ${tag}`);
    await ingest.publish("ingest.call", {
      workspaceId: ws.id,
      rowId: uniq("ok"),
      contactId,
      direction: "inbound",
      startedAt: "2026-01-10T10:00:00Z",
      durationSec: 0,
      status: "no_answer",
    });
    await timeline(ws, `contactId=${contactId}`, 1);
    const dead = await ingest.deadLetters(tag, since);
    expect(dead.map((d) => d.reason)).toEqual([
      expect.stringContaining("invalid body"),
      expect.stringContaining("not JSON"),
    ]);
    expect(dead[0]).toMatchObject({
      subject: "ingest.call",
      deadSubject: expect.stringMatching(/ingest\.dead\.ingest\.call$/),
    });
    expect(dead[0].details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "body.direction" }),
        expect.objectContaining({ path: "body.startedAt" }),
      ]),
    );
  });
});

describe("human touches and last activity in the single reads (docs/api/contacts.md §GET /contacts/{id}; docs/api/deals.md §GET /opportunities/{id})", () => {
  let ws: Workspace;
  let pipelineId: string;
  let memberId: string;
  beforeAll(async () => {
    ws = await newWorkspace();
    const p = await ws.admin("POST", `/workspaces/${ws.id}/pipelines`, {
      name: "Sales",
      stages: [{ name: "A" }, { name: "B" }],
    });
    pipelineId = p.body.id;
    const m = await ws.admin("POST", `/workspaces/${ws.id}/members`, {
      name: "Rep",
      email: `${uniq("rep")}@x.io`,
      role: "owner",
    });
    memberId = m.body.id;
  });

  it("GET /contacts/{id}: first and last actor=user touch, whatever the arrival order; null when none", async () => {
    const contactId = await contactIn(ws);
    const read = async () => (await ws.call("GET", `/contacts/${contactId}`)).body;
    expect(await read()).toMatchObject({ firstHumanTouchAt: null, lastHumanTouchAt: null });
    // Not touches: the contact, automation, a user stamp on an inbound message.
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { direction: "inbound", sentAt: "2026-02-01T00:00:00.000Z" }),
    );
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { senderKind: "automation", sentAt: "2026-02-02T00:00:00.000Z" }),
    );
    await timeline(ws, `contactId=${contactId}`, 2);
    expect(await read()).toMatchObject({ firstHumanTouchAt: null, lastHumanTouchAt: null });
    // The later one arrives first.
    await ingest.publish(
      "ingest.inbox.message",
      message(ws, contactId, { senderUserId: "u1", sentAt: "2026-02-05T00:00:00.000Z" }),
    );
    await ingest.publish("ingest.email", {
      workspaceId: ws.id,
      rowId: uniq("e"),
      contactId,
      direction: "outbound",
      kind: "panel_reply",
      userId: "u2",
      sentAt: "2026-02-03T00:00:00.000Z",
      preview: "x",
    });
    await timeline(ws, `contactId=${contactId}`, 4);
    expect(await read()).toMatchObject({
      firstHumanTouchAt: "2026-02-03T00:00:00.000Z",
      lastHumanTouchAt: "2026-02-05T00:00:00.000Z",
    });
    // A note by a member is a human touch too, and a note interaction.
    const note = await ws.call("POST", "/notes", { contactId, body: "called", userId: memberId });
    expect(note.status).toBe(201);
    const tl = await timeline(ws, `contactId=${contactId}&channel=note`, 1);
    expect(tl.data[0]).toMatchObject({
      id: `note:${note.body.id}`,
      actor: "user",
      userId: memberId,
      direction: "outbound",
    });
    expect(await read()).toMatchObject({ lastHumanTouchAt: note.body.createdAt });
  });

  it("GET /opportunities/{id}: touches from the deal's creation only; lastActivityAt from the ledger", async () => {
    const contactId = await contactIn(ws);
    // A touch long before the deal: belongs to an earlier story, never inherited.
    await ingest.publish("ingest.call", {
      workspaceId: ws.id,
      rowId: uniq("c"),
      contactId,
      direction: "outbound",
      userId: "u1",
      startedAt: "2020-01-01T00:00:00.000Z",
      durationSec: 10,
      status: "answered",
    });
    await timeline(ws, `contactId=${contactId}`, 1);
    const created = await ws.call("POST", "/opportunities", { contactId, pipelineId, title: "Deal" });
    expect(created.status).toBe(201);
    const dealId = created.body.id;
    const read = async () => (await ws.call("GET", `/opportunities/${dealId}`)).body;
    expect(await read()).toMatchObject({
      firstHumanTouchAt: null,
      lastHumanTouchAt: null,
      lastActivityAt: null,
    });
    expect((await ws.call("GET", `/contacts/${contactId}`)).body.firstHumanTouchAt).toBe(
      "2020-01-01T00:00:00.000Z",
    );

    const later = new Date(Date.parse(created.body.createdAt) + 60_000).toISOString();
    const latest = new Date(Date.parse(created.body.createdAt) + 120_000).toISOString();
    for (const [rowId, sentAt] of [
      [uniq("m"), latest],
      [uniq("m"), later],
    ])
      await ingest.publish(
        "ingest.inbox.message",
        message(ws, contactId, { rowId, senderUserId: "u1", sentAt }),
      );
    await timeline(ws, `contactId=${contactId}`, 3);
    await expect
      .poll(read)
      .toMatchObject({ firstHumanTouchAt: later, lastHumanTouchAt: latest, lastActivityAt: null });

    // Actions on the deal and on its task and note move lastActivityAt.
    const moved = await ws.call("PATCH", `/opportunities/${dealId}`, { title: "Deal 2" });
    expect(moved.status).toBe(200);
    await expect.poll(async () => (await read()).lastActivityAt).toBe(moved.body.updatedAt);
    const task = await ws.call("POST", "/tasks", { title: "Call back", opportunityId: dealId });
    expect(task.status).toBe(201);
    await expect.poll(async () => (await read()).lastActivityAt).toBe(task.body.createdAt);
    const note = await ws.call("POST", "/notes", {
      contactId,
      opportunityId: dealId,
      body: "sent proposal",
      userId: memberId,
    });
    await expect.poll(async () => (await read()).lastActivityAt).toBe(note.body.createdAt);
    // A note on the deal is its activity and the contact's touch, with its opportunityId in the timeline.
    expect((await read()).lastHumanTouchAt).toBe([latest, note.body.createdAt].sort().at(-1));
    const notes = await timeline(ws, `contactId=${contactId}&channel=note`, 1);
    expect(notes.data[0].opportunityId).toBe(dealId);
    // The deal list never carries the single-read fields.
    const list = await ws.call("GET", `/opportunities?contactId=${contactId}`);
    expect(list.body.data[0]).not.toHaveProperty("lastActivityAt");
  });

  it("a later deal of the same contact does not end an earlier deal's window (docs/api/deals.md §GET /opportunities/{id})", async () => {
    const contactId = await contactIn(ws);
    const first = await ws.call("POST", "/opportunities", { contactId, pipelineId, title: "One" });
    const second = await ws.call("POST", "/opportunities", { contactId, pipelineId, title: "Two" });
    const at = new Date(Date.parse(second.body.createdAt) + 1000).toISOString();
    await ingest.publish("ingest.inbox.message", message(ws, contactId, { senderUserId: "u1", sentAt: at }));
    await timeline(ws, `contactId=${contactId}`, 1);
    for (const d of [first, second])
      await expect
        .poll(async () => (await ws.call("GET", `/opportunities/${d.body.id}`)).body.firstHumanTouchAt)
        .toBe(at);
  });
});

describe("composed single reads when the timeline is away (docs/operations.md §Faults)", () => {
  let gw: GatewayCopy;
  beforeAll(async () => {
    gw = await gatewayCopy({
      // Nothing listens there: the timeline is down.
      TIMELINE_URL: "http://127.0.0.1:9",
      UPSTREAM_TIMEOUT_MS: "2000",
    });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it("GET /contacts/{id} and GET /opportunities/{id} answer 503 unavailable, never invented nulls", async () => {
    const ws = await newWorkspace();
    const contactId = await contactIn(ws);
    const p = await ws.admin("POST", `/workspaces/${ws.id}/pipelines`, {
      name: "S",
      stages: [{ name: "A" }],
    });
    const deal = await ws.call("POST", "/opportunities", { contactId, pipelineId: p.body.id, title: "D" });
    const auth = { authorization: `Bearer ${ws.key}` };
    for (const path of [`/contacts/${contactId}`, `/opportunities/${deal.body.id}`]) {
      const res = await request("GET", `${gw.url}/api/v1${path}`, undefined, auth);
      expect([path, res.status, res.body.error?.code]).toEqual([path, 503, "unavailable"]);
      expect(res.headers.get("retry-after")).toBeTruthy();
    }
    // crm alone still answers through this gateway.
    expect((await request("GET", `${gw.url}/api/v1/contacts?limit=1`, undefined, auth)).status).toBe(200);
  });
});
