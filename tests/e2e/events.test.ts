import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DomainEventSchema, WebhookService } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventsSubscriber, gatewayUrl, keyFor, newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, startReceiver } from "../receiver.js";
import { contact, deal, pipeline } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

/*
 * Catching up without webhooks (docs/api/events.md §Catch-up: GET /events): a client replays the
 * workspace's events from the last one it processed, each once, in the order of the EVENTS stream, as
 * webhook receivers get them, limited to what its key may read.
 */
const CATALOGED = new Set([
  "contact.created",
  "contact.updated",
  "opportunity.created",
  "opportunity.stage_changed",
  "opportunity.won",
  "opportunity.lost",
  "meeting.booked",
  "meeting.rescheduled",
  "meeting.canceled",
  "meeting.outcome",
]);

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
type Event = any;

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
});

/** What a client that polls does: page after page, each starting after the last event it got. */
async function catchUp(ws: Workspace, after?: string, query = "limit=3"): Promise<Event[]> {
  const got: Event[] = [];
  let last = after;
  for (;;) {
    const res = await ws.call("GET", `/events?${query}${last ? `&after=${last}` : ""}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    got.push(...res.body.data);
    if (res.body.data.length === 0) return got;
    last = res.body.data.at(-1).id;
  }
}

/** Polls until `n` events are listed (the fan-out writes the log shortly after each change). */
const caughtUp = (ws: Workspace, n: number, after?: string, query?: string) =>
  waitFor(async () => {
    const got = await catchUp(ws, after, query);
    return got.length >= n ? got : undefined;
  }, 20_000);

/** One of each kind of change: a contact, a deal through its stages, a meeting moved then canceled, a task. */
async function changes(ws: Workspace) {
  const p = await pipeline(ws);
  const c = await contact(ws);
  expect((await ws.call("PATCH", `/contacts/${c.id}`, { name: "Renamed" })).status).toBe(200);
  const d = await deal(ws, { contactId: c.id, pipelineId: p.id });
  expect((await ws.call("PATCH", `/opportunities/${d.id}`, { stageId: p.stages[1]!.id })).status).toBe(200);
  expect((await ws.call("PATCH", `/opportunities/${d.id}`, { status: "won" })).status).toBe(200);
  const cal = await calendar(ws);
  const m = await book(ws, {
    calendarId: cal.id,
    contactId: c.id,
    assigneeUserId: cal.assigneeUserIds[0],
    startAt: ahead(3, "10:00"),
  });
  expect(m.status, JSON.stringify(m.body)).toBe(201);
  const moved = await ws.call("POST", `/appointments/${m.body.id}/reschedule`, {
    startAt: ahead(3, "11:00"),
  });
  expect(moved.status).toBe(200);
  expect((await ws.call("POST", `/appointments/${m.body.id}/cancel`, {})).status).toBe(200);
  // Not subscribable, so not listed.
  expect((await ws.call("POST", "/tasks", { title: "Call back", contactId: c.id })).status).toBe(201);
  return { contact: c, deal: d };
}

const EXPECTED = [
  "contact.created",
  "contact.updated",
  "opportunity.created",
  "opportunity.stage_changed",
  "opportunity.won",
  "meeting.booked",
  "meeting.rescheduled",
  "meeting.canceled",
];

describe("GET /events (docs/api/events.md §Catch-up: GET /events)", () => {
  it("docs/api/events.md §Catch-up: GET /events: every subscribable event once, in the order of the EVENTS stream, page after page", async () => {
    const stream = await eventsSubscriber();
    try {
      const ws = await newWorkspace();
      await changes(ws);
      const got = await caughtUp(ws, EXPECTED.length);
      expect(got.map((e) => e.type)).toEqual(EXPECTED);
      expect(new Set(got.map((e) => e.id)).size).toBe(got.length);
      // The stream's own order, read from JetStream, of this workspace's subscribable events.
      const inStream = await waitFor(async () => {
        const mine = stream.inOrder().filter((e) => e.workspaceId === ws.id && CATALOGED.has(e.type));
        return mine.length >= EXPECTED.length ? mine : undefined;
      });
      expect(got.map((e) => e.id)).toEqual(inStream.map((e: Event) => e.id));
      // The same list through nextCursor, a page of 3 at a time, and whole in one page.
      const pages: Event[] = [];
      let cursor: string | null = null;
      do {
        const res = await ws.call("GET", `/events?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
        expect(res.status).toBe(200);
        expect(res.body.data.length).toBeLessThanOrEqual(3);
        pages.push(...res.body.data);
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(pages).toEqual(got);
      expect((await ws.call("GET", "/events")).body).toEqual({ data: got, nextCursor: null });
    } finally {
      await stream.close();
    }
  });

  it("docs/api/events.md §Catch-up: GET /events: a client that was down replays from the last event it processed: exactly what came after, the new events included", async () => {
    const ws = await newWorkspace();
    const { contact: c } = await changes(ws);
    const all = await caughtUp(ws, EXPECTED.length);
    // The client processed the first three, then went down; meanwhile more happened.
    const last = all[2].id;
    expect((await ws.call("PATCH", `/contacts/${c.id}`, { name: "Renamed again" })).status).toBe(200);
    const d = await deal(ws, { contactId: c.id, pipelineId: (await pipeline(ws)).id });
    expect((await ws.call("PATCH", `/opportunities/${d.id}`, { status: "lost" })).status).toBe(200);
    const replay = await caughtUp(ws, all.length, last);
    expect(replay.map((e) => e.id).slice(0, all.length - 3)).toEqual(all.slice(3).map((e) => e.id));
    expect(replay.slice(all.length - 3).map((e) => e.type)).toEqual([
      "contact.updated",
      "opportunity.created",
      "opportunity.lost",
    ]);
    expect(replay.at(-1).data).toMatchObject({ id: d.id, status: "lost" });
    // Caught up: after the last event, nothing (yet).
    expect((await ws.call("GET", `/events?after=${replay.at(-1).id}`)).body).toEqual({
      data: [],
      nextCursor: null,
    });
  });

  it("docs/api/events.md §Catch-up: GET /events: each item is the body a webhook receiver gets for that event, byte for byte", async () => {
    const ws = await newWorkspace();
    const path = `/events-${Date.now().toString(36)}`;
    const sub = await ws.call("POST", "/webhooks", { url: rx.url(path), events: ["contact.created"] });
    expect(sub.status).toBe(201);
    const c = await contact(ws, { tags: ["lead"], customFields: {} });
    const [delivered] = await waitFor(async () => (rx.at(path).length > 0 ? rx.at(path) : undefined), 20_000);
    const [listed] = await caughtUp(ws, 1, undefined, "type=contact.created");
    expect(listed.data.id).toBe(c.id);
    expect(JSON.stringify(listed)).toBe(delivered!.raw);
    expect(Object.keys(listed)).toEqual(["id", "type", "createdAt", "workspaceId", "data"]);
  });

  it("docs/api/events.md §Catch-up: GET /events: the page carries the bodies receivers got, verbatim; the service answers the same events as messages to a caller that does not ask for them as JSON", async () => {
    const ws = await newWorkspace();
    const path = `/events-raw-${Date.now().toString(36)}`;
    expect(
      (await ws.call("POST", "/webhooks", { url: rx.url(path), events: ["contact.created"] })).status,
    ).toBe(201);
    // A name with an accent, a quote and a line break: bytes that a second serializer could write differently.
    await contact(ws, { name: 'Zoë "Zé"\nSilva', tags: ["lead", "🚀"] });
    const [delivered] = await waitFor(async () => (rx.at(path).length > 0 ? rx.at(path) : undefined), 20_000);
    await caughtUp(ws, 1, undefined, "type=contact.created");
    const res = await fetch(`${gatewayUrl()}/api/v1/events?type=contact.created`, {
      headers: { authorization: `Bearer ${ws.key}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const text = await res.text();
    expect(text).toBe(`{"data":[${delivered!.raw}],"nextCursor":null}`);

    // A gateway copy that does not ask for api_json (as during a rolling update) gets messages of the same events.
    const webhooks = createClient(WebhookService, createGrpcTransport({ baseUrl: inject("webhooksUrl") }));
    const asked = { workspaceId: ws.id, scopes: ["contacts.read"], type: "contact.created" };
    const messages = await webhooks.listEvents(asked);
    expect(messages.dataJson.length).toBe(0);
    expect(messages.data.map((e) => toApiJson(DomainEventSchema, e))).toEqual(JSON.parse(text).data);
    const json = await webhooks.listEvents({ ...asked, apiJson: true });
    expect(json.data).toEqual([]);
    expect(json.dataJson).toBe(`[${delivered!.raw}]`);
  });

  it("docs/api/events.md §Catch-up: GET /events: only the event types of the key's read scopes; asking for another type is 403 missing_scope; a key without any is refused", async () => {
    const ws = await newWorkspace();
    await changes(ws);
    await caughtUp(ws, EXPECTED.length);
    const contactsOnly = await keyFor(ws, ["contacts.read"]);
    expect((await catchUp(contactsOnly)).map((e) => e.type)).toEqual(["contact.created", "contact.updated"]);
    const dealsAndMeetings = await keyFor(ws, ["opportunities.read", "calendars.read", "contacts.write"]);
    expect((await catchUp(dealsAndMeetings)).map((e) => e.type)).toEqual(EXPECTED.slice(2));
    const asked = await contactsOnly.call("GET", "/events?type=contact.updated,meeting.booked");
    expect(asked.status).toBe(403);
    expect(asked.body.error).toMatchObject({
      code: "missing_scope",
      details: [{ path: "scope", message: "calendars.read" }],
    });
    const none = await keyFor(ws, ["tasks.read", "webhooks.manage"]);
    const refused = await none.call("GET", "/events");
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("missing_scope");
  });

  it("docs/api/events.md §Catch-up: GET /events: type restricts the list to one type or a comma-separated list; an unknown type is a 400", async () => {
    const ws = await newWorkspace();
    await changes(ws);
    const all = await caughtUp(ws, EXPECTED.length);
    const some = await catchUp(ws, undefined, "type=opportunity.won,%20contact.updated");
    expect(some.map((e) => e.type)).toEqual(["contact.updated", "opportunity.won"]);
    expect(some).toEqual(all.filter((e) => e.type === "contact.updated" || e.type === "opportunity.won"));
    expect((await catchUp(ws, all[0].id, "type=meeting.booked")).map((e) => e.type)).toEqual([
      "meeting.booked",
    ]);
    for (const bad of ["task.created", "contact.created,nope", "", "opportunity.updated", "constructor"]) {
      const res = await ws.call("GET", `/events?type=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
      expect(res.body.error.details[0].path).toBe("query.type");
    }
  });

  it("docs/api/events.md §Catch-up: GET /events: an after the log does not hold (unknown, another workspace's) is 404 not_found, the same for both; a cursor of other filters is 400 invalid_cursor", async () => {
    const [ws, other] = [await newWorkspace(), await newWorkspace()];
    await contact(other);
    const [theirs] = await caughtUp(other, 1);
    const unknown = await ws.call("GET", "/events?after=evt_00000000000000000000");
    const foreign = await ws.call("GET", `/events?after=${theirs.id}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("not_found");
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    await contact(ws);
    await contact(ws);
    await caughtUp(ws, 2);
    const first = await ws.call("GET", "/events?limit=1");
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const moved = await ws.call(
      "GET",
      `/events?limit=1&type=contact.created&cursor=${first.body.nextCursor}`,
    );
    expect(moved.status).toBe(400);
    expect(moved.body.error.code).toBe("invalid_cursor");
    const elsewhere = await other.call("GET", `/events?limit=1&cursor=${first.body.nextCursor}`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.code).toBe("invalid_cursor");
  });
});
