import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, startReceiver } from "../receiver.js";
import { contact, deal, pipeline } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

/*
 * The event catalog (docs/api/webhooks.md §Event catalog): every subscribable event, with its read scope
 * and the JSON Schema of a delivery's body; every body the services really send, one of each type, is
 * valid against its schema, checked with an independent validator (Ajv, JSON Schema 2020-12).
 */
let ws: Workspace;
let rx: Receiver;
beforeAll(async () => {
  [ws, rx] = await Promise.all([newWorkspace(), startReceiver()]);
});
afterAll(async () => {
  await rx.close();
});

interface EventType {
  type: string;
  description: string;
  scope: string;
  schema: Record<string, unknown>;
}

describe("the event catalog (docs/api/webhooks.md §Event catalog)", () => {
  it("lists every subscribable event with its description, read scope and a JSON Schema; webhooks.manage reads it", async () => {
    const res = await ws.call("GET", "/webhooks/event-types");
    expect(res.status).toBe(200);
    const data = res.body.data as EventType[];
    expect(data.map((e) => e.type)).toEqual([
      "contact.created",
      "contact.updated",
      "contact.erased",
      "opportunity.created",
      "opportunity.stage_changed",
      "opportunity.won",
      "opportunity.lost",
      "meeting.booked",
      "meeting.rescheduled",
      "meeting.canceled",
      "meeting.outcome",
    ]);
    expect(data.find((e) => e.type === "meeting.outcome")).toMatchObject({ scope: "calendars.read" });
    for (const e of data) {
      expect(e.description.length).toBeGreaterThan(5);
      expect(e.schema).toMatchObject({
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
      });
    }
    const doc = await ws.call("GET", "/openapi.json");
    expect(Object.keys(doc.body.webhooks ?? {}).sort()).toEqual(data.map((e) => e.type).sort());
  });

  it("every body the services send is valid against its event's schema, and one that is not is caught", async () => {
    const types = ((await ws.call("GET", "/webhooks/event-types")).body.data as EventType[]).map((e) => e);
    const url = rx.url(`/catalog-${Date.now().toString(36)}`);
    const sub = await ws.call("POST", "/webhooks", { url, events: types.map((t) => t.type) });
    expect(sub.status).toBe(201);

    // One of each event, through the real routes.
    const p = await pipeline(ws);
    const c = await contact(ws);
    expect((await ws.call("PATCH", `/contacts/${c.id}`, { name: "Renamed" })).status).toBe(200);
    const d1 = await deal(ws, { contactId: c.id, pipelineId: p.id });
    expect((await ws.call("PATCH", `/opportunities/${d1.id}`, { stageId: p.stages[1]!.id })).status).toBe(
      200,
    );
    expect((await ws.call("PATCH", `/opportunities/${d1.id}`, { status: "won" })).status).toBe(200);
    const d2 = await deal(ws, { contactId: c.id, pipelineId: p.id });
    expect((await ws.call("PATCH", `/opportunities/${d2.id}`, { status: "lost" })).status).toBe(200);
    const cal = await calendar(ws);
    const m = await book(ws, {
      calendarId: cal.id,
      contactId: c.id,
      assigneeUserId: cal.assigneeUserIds[0],
      startAt: ahead(3, "10:00"),
    });
    expect(m.status, JSON.stringify(m.body)).toBe(201);
    const id = m.body.id;
    expect(
      (await ws.call("POST", `/appointments/${id}/reschedule`, { startAt: ahead(3, "11:00") })).status,
    ).toBe(200);
    expect((await ws.call("POST", `/appointments/${id}/outcome`, { outcome: "realizada" })).status).toBe(200);
    expect((await ws.call("POST", `/appointments/${id}/cancel`, {})).status).toBe(200);
    const erased = await contact(ws);
    expect((await ws.call("POST", `/contacts/${erased.id}/erase`)).status).toBe(200);

    const path = new URL(url).pathname;
    const got = await waitFor(async () => {
      const seen = new Set(rx.at(path).map((r) => r.body?.type));
      return types.every((t) => seen.has(t.type)) ? rx.at(path) : undefined;
    }, 20_000);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    for (const t of types) {
      const valid = ajv.compile(t.schema);
      for (const r of got.filter((r) => r.body?.type === t.type))
        expect(valid(r.body) ? [] : valid.errors, `${t.type}: ${r.raw.slice(0, 300)}`).toEqual([]);
      // The schema is not an empty promise: a body without its resource's id, or of another type, fails.
      const sample = structuredClone(got.find((r) => r.body?.type === t.type)!.body);
      delete sample.data.id;
      expect(valid(sample), `${t.type} without data.id`).toBe(false);
      expect(valid({ ...sample, type: "contact.deleted" })).toBe(false);
    }
  });
});
