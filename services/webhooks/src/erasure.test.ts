import { describe, expect, it } from "vitest";
import { redactBody } from "./erasure.js";

const body = (type: string, data: Record<string, unknown>) =>
  JSON.stringify({ id: "evt_1", type, createdAt: "2026-01-01T00:00:00.000Z", workspaceId: "ws_1", data });

describe("redacting a delivery's body (docs/api/contacts.md §POST /contacts/{id}/erase)", () => {
  it("docs/api/contacts.md §POST /contacts/{id}/erase: a contact event keeps its id, status and times; every personal field is empty", () => {
    const contact = {
      id: "ct_1",
      name: "Maria",
      phone: "+55 11 97777-1234",
      email: "maria@example.com",
      tags: ["vip"],
      customFields: { plan: "pro" },
      utm: { source: "google", medium: null, campaign: null, term: null, content: null },
      status: "active",
      ownerUserId: "usr_1",
      createdAt: "2026-01-01T00:00:00.000Z",
    };
    const out = JSON.parse(redactBody("contact.updated", body("contact.updated", contact), "ct_1")!);
    expect(out.id).toBe("evt_1");
    expect(out.data).toMatchObject({
      id: "ct_1",
      status: "active",
      ownerUserId: "usr_1",
      name: null,
      tags: [],
    });
    expect(JSON.stringify(out)).not.toMatch(/Maria|97777|maria@|google|pro/);
  });

  it("docs/api/contacts.md §POST /contacts/{id}/erase: a meeting event loses its contact name and free texts; another contact's body and deal events are left", () => {
    const meeting = {
      id: "apt_1",
      contactId: "ct_1",
      contactName: "Maria",
      title: "Demo Maria",
      location: "Rua X",
    };
    const out = JSON.parse(redactBody("meeting.booked", body("meeting.booked", meeting), "ct_1")!);
    expect(out.data).toMatchObject({
      id: "apt_1",
      contactId: "ct_1",
      contactName: null,
      title: null,
      location: null,
    });
    expect(redactBody("meeting.booked", body("meeting.booked", meeting), "ct_2")).toBeUndefined();
    const deal = { id: "op_1", contactId: "ct_1", title: "Plano" };
    expect(redactBody("opportunity.created", body("opportunity.created", deal), "ct_1")).toBeUndefined();
    expect(
      redactBody("contact.erased", body("contact.erased", { id: "ct_1", erasedAt: "x" }), "ct_1"),
    ).toBeUndefined();
  });

  it("docs/api/contacts.md §POST /contacts/{id}/erase: the event log's note and task events about the contact lose their text, as crm deletes the notes and empties the tasks' bodies", () => {
    const note = { id: "nt_1", contactId: "ct_1", body: "Called Maria on 97777", userId: "u_1" };
    expect(JSON.parse(redactBody("note.created", body("note.created", note), "ct_1")!).data).toEqual({
      ...note,
      body: null,
    });
    const task = { id: "tk_1", contactId: "ct_1", title: "Call back", body: "ring 97777" };
    expect(JSON.parse(redactBody("task.updated", body("task.updated", task), "ct_1")!).data).toEqual({
      ...task,
      body: null,
    });
    expect(redactBody("task.created", body("task.created", task), "ct_2")).toBeUndefined();
  });
});
