import { createHash } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AuditEntrySchema, WebhookService } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ALL_SCOPES,
  admin,
  gatewayUrl,
  keyFor,
  newWorkspace,
  type Response,
  type Workspace,
  waitFor,
  withKey,
} from "../helpers.js";
import { type Receiver, startReceiver } from "../receiver.js";
import { contact, pipeline } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

/*
 * Who did it (docs/api/events.md §Who made a change, §Audit: GET /audit): every change names the key
 * behind it (or admin), the request that made it, and the fields it touched, never their values.
 */

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
type Entry = any;

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
});

/** Every audit entry the query lists, page after page. */
async function auditOf(ws: Workspace, query: string): Promise<Entry[]> {
  const got: Entry[] = [];
  let cursor: string | undefined;
  do {
    const res = await ws.call("GET", `/audit?${query}&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    got.push(...res.body.data);
    cursor = res.body.nextCursor ?? undefined;
  } while (cursor);
  return got;
}

/** Polls until the entity's audit list has `n` entries (the log is written shortly after each change). */
const audited = (ws: Workspace, entity: string, id: string, n: number) =>
  waitFor(async () => {
    const got = await auditOf(ws, `entity=${entity}&id=${id}`);
    return got.length >= n ? got : undefined;
  }, 20_000);

/** A write that must succeed; answers its body and the x-request-id the gateway answered. */
async function write(res: Promise<Response>, status: number) {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  const requestId = r.headers.get("x-request-id");
  expect(requestId).toBeTruthy();
  return { body: r.body, requestId };
}

const byKey = (keyId: string, requestId: string | null) => ({
  actor: { type: "key", id: keyId },
  requestId,
});

describe("GET /audit", () => {
  it("docs/api/events.md §Audit: GET /audit: a contact, deal, task, meeting and webhook subscription changed by two keys list each change with its key, its request id and the names of the fields it changed", async () => {
    const a = await newWorkspace();
    const b = await keyFor(a, ALL_SCOPES);
    expect(a.keyId).not.toBe(b.keyId);

    // contact: created by A, renamed by B
    const c = await write(
      a.call("POST", "/contacts", { name: "Ana", email: `ana${Date.now()}@example.com` }),
      201,
    );
    const renamed = await write(b.call("PATCH", `/contacts/${c.body.id}`, { name: "Very Secret Name" }), 200);
    const contactLog = await audited(a, "contact", c.body.id, 2);
    expect(contactLog.map((e) => [e.type, e.entity, e.entityId])).toEqual([
      ["contact.created", "contact", c.body.id],
      ["contact.updated", "contact", c.body.id],
    ]);
    expect(contactLog[0]).toMatchObject(byKey(a.keyId, c.requestId));
    expect(contactLog[0].changes).toEqual(expect.arrayContaining(["name", "email"]));
    expect(contactLog[1]).toMatchObject({ ...byKey(b.keyId, renamed.requestId), changes: ["name"] });
    // Names, never values.
    expect(JSON.stringify(contactLog)).not.toContain("Very Secret Name");
    expect(JSON.stringify(contactLog)).not.toContain("Ana");

    // deal: created by A, moved by B
    const p = await pipeline(a);
    const d = await write(
      a.call("POST", "/opportunities", { title: "Plano", contactId: c.body.id, pipelineId: p.id }),
      201,
    );
    const moved = await write(
      b.call("PATCH", `/opportunities/${d.body.id}`, { stageId: p.stages[1]!.id }),
      200,
    );
    const dealLog = await audited(a, "opportunity", d.body.id, 3);
    expect(dealLog.map((e) => e.type)).toEqual([
      "opportunity.created",
      "opportunity.updated",
      "opportunity.stage_changed",
    ]);
    expect(dealLog[0]).toMatchObject(byKey(a.keyId, d.requestId));
    for (const e of dealLog.slice(1)) {
      expect(e).toMatchObject(byKey(b.keyId, moved.requestId));
      expect(e.changes).toContain("stageId");
      expect(e.changes).not.toContain("title");
    }

    // task: created by B, completed by A
    const t = await write(b.call("POST", "/tasks", { title: "Call back", contactId: c.body.id }), 201);
    const done = await write(a.call("PATCH", `/tasks/${t.body.id}`, { completed: true }), 200);
    const taskLog = await audited(a, "task", t.body.id, 2);
    expect(taskLog[0]).toMatchObject({ type: "task.created", ...byKey(b.keyId, t.requestId) });
    expect(taskLog[1]).toMatchObject({ type: "task.updated", ...byKey(a.keyId, done.requestId) });
    // `completed: true` sets completedAt, the field the API shows.
    expect(taskLog[1].changes).toEqual(["completedAt"]);

    // meeting: booked by A, moved by B
    const cal = await calendar(a);
    const m = await write(
      book(a, {
        calendarId: cal.id,
        contactId: c.body.id,
        assigneeUserId: cal.assigneeUserIds[0],
        startAt: ahead(3, "10:00"),
      }),
      201,
    );
    const rescheduled = await write(
      b.call("POST", `/appointments/${m.body.id}/reschedule`, { startAt: ahead(3, "11:00") }),
      200,
    );
    const meetingLog = await audited(a, "meeting", m.body.id, 2);
    expect(meetingLog[0]).toMatchObject({ type: "meeting.booked", ...byKey(a.keyId, m.requestId) });
    expect(meetingLog[1]).toMatchObject({
      type: "meeting.rescheduled",
      ...byKey(b.keyId, rescheduled.requestId),
    });
    expect(meetingLog[1].changes).toEqual(expect.arrayContaining(["startAt", "endAt"]));
    expect(meetingLog[1].changes).not.toContain("contactId");

    // webhook subscription: created by A, described by B, its secret rotated by A, deleted by B
    const w = await write(
      a.call("POST", "/webhooks", { url: rx.url("/audit"), events: ["contact.created"] }),
      201,
    );
    const id = w.body.subscription.id;
    const described = await write(b.call("PATCH", `/webhooks/${id}`, { description: "CRM sync" }), 200);
    const rotated = await write(a.call("POST", `/webhooks/${id}/rotate-secret`), 200);
    const deleted = await write(b.call("DELETE", `/webhooks/${id}`), 204);
    const webhookLog = await audited(a, "webhook", id, 4);
    expect(webhookLog.map((e) => [e.type, e.actor.id, e.requestId, e.changes])).toEqual([
      ["webhook.created", a.keyId, w.requestId, expect.arrayContaining(["url", "events"])],
      ["webhook.updated", b.keyId, described.requestId, ["description"]],
      ["webhook.secret_rotated", a.keyId, rotated.requestId, ["secret"]],
      ["webhook.deleted", b.keyId, deleted.requestId, []],
    ]);
    expect(JSON.stringify(webhookLog)).not.toContain("whsec_");
    expect(JSON.stringify(webhookLog)).not.toContain("CRM sync");

    // The whole workspace, oldest first, every entry naming a key or admin.
    const all = await auditOf(a, "");
    expect(all.length).toBeGreaterThanOrEqual(13);
    for (const e of all) expect(["key", "admin"]).toContain(e.actor.type);
    expect(new Set(all.filter((e) => e.actor.type === "key").map((e) => e.actor.id))).toEqual(
      new Set([a.keyId, b.keyId]),
    );
  });

  it("docs/api/events.md §Who made a change: a change made through the admin API (pipelines, members, custom fields, calendars) says admin, with the admin request's id", async () => {
    const ws = await newWorkspace();
    const res = await ws.admin("POST", `/workspaces/${ws.id}/pipelines`, {
      name: "Vendas",
      stages: [{ name: "Novo" }, { name: "Ganho" }],
    });
    expect(res.status).toBe(201);
    const [entry] = await audited(ws, "pipeline", res.body.id, 1);
    expect(entry).toMatchObject({
      type: "pipeline.created",
      actor: { type: "admin", id: null },
      requestId: res.headers.get("x-request-id"),
    });
    expect(entry.changes).toEqual(expect.arrayContaining(["name", "stages"]));

    // Members, custom fields and calendars change only through the admin API, and are audited too.
    const added = await ws.admin("POST", `/workspaces/${ws.id}/members`, {
      name: "Bia",
      email: `bia${Date.now()}@example.com`,
      role: "atendente",
    });
    expect(added.status).toBe(201);
    const off = await ws.admin("PATCH", `/workspaces/${ws.id}/members/${added.body.id}`, { active: false });
    expect(off.status).toBe(200);
    const memberLog = await audited(ws, "member", added.body.id, 2);
    expect(memberLog.map((e) => [e.type, e.actor, e.requestId, e.changes])).toEqual([
      [
        "member.created",
        { type: "admin", id: null },
        added.headers.get("x-request-id"),
        expect.arrayContaining(["name", "email", "role", "active"]),
      ],
      ["member.updated", { type: "admin", id: null }, off.headers.get("x-request-id"), ["active"]],
    ]);
    const field = await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
      entity: "contact",
      fieldKey: "plan",
      label: "Plano",
      type: "text",
    });
    expect(field.status, JSON.stringify(field.body)).toBe(201);
    const [fieldEntry] = await audited(ws, "custom_field", field.body.id, 1);
    expect(fieldEntry).toMatchObject({ type: "custom_field.created", actor: { type: "admin" } });
    const cal = await calendar(ws);
    const [calendarEntry] = await audited(ws, "calendar", cal.id, 1);
    expect(calendarEntry).toMatchObject({ type: "calendar.created", actor: { type: "admin" } });
    expect(calendarEntry.changes).toEqual(expect.arrayContaining(["key", "assigneeUserIds"]));
  });

  it("docs/api/events.md §Who made a change: the gateway's own changes, a workspace and its API keys created, rescoped, revoked or renamed through the admin API, say admin with the admin request's id and never carry a secret or hash", async () => {
    const created = await write(admin("POST", "/workspaces", { name: "Audited", operator: false }), 201);
    const wsId = created.body.id;
    const made = await write(
      admin("POST", `/workspaces/${wsId}/keys`, { name: "k", scopes: ["audit.read", "contacts.read"] }),
      201,
    );
    const key = made.body.key.id;
    const reader = await withKey(wsId, made.body.secret, key);
    const rescoped = await write(admin("PATCH", `/keys/${key}`, { scopes: ["audit.read"] }), 200);
    const renamed = await write(admin("PATCH", `/workspaces/${wsId}`, { name: "Audited too" }), 200);
    const other = await write(admin("POST", `/workspaces/${wsId}/keys`, { name: "gone", scopes: [] }), 201);
    const revoked = await write(admin("DELETE", `/keys/${other.body.key.id}`), 204);
    // Revoking a revoked key changes nothing, and says nothing.
    await write(admin("DELETE", `/keys/${other.body.key.id}`), 204);

    const asAdmin = { type: "admin", id: null };
    const keyLog = await audited(reader, "api_key", key, 2);
    expect(keyLog.map((e) => [e.type, e.actor, e.requestId, e.changes])).toEqual([
      ["api_key.created", asAdmin, made.requestId, expect.arrayContaining(["name", "scopes", "prefix"])],
      ["api_key.updated", asAdmin, rescoped.requestId, ["scopes"]],
    ]);
    const revokedLog = await audited(reader, "api_key", other.body.key.id, 2);
    expect(revokedLog.map((e) => [e.type, e.requestId, e.changes])).toEqual([
      ["api_key.created", other.requestId, expect.arrayContaining(["name", "prefix"])],
      ["api_key.revoked", revoked.requestId, ["revokedAt"]],
    ]);
    const wsLog = await audited(reader, "workspace", wsId, 2);
    expect(wsLog.map((e) => [e.type, e.actor, e.requestId, e.changes])).toEqual([
      ["workspace.created", asAdmin, created.requestId, expect.arrayContaining(["name"])],
      ["workspace.updated", asAdmin, renamed.requestId, ["name"]],
    ]);
    // The secret is shown once, in the creation's answer; neither it nor its hash is in any event.
    const hash = createHash("sha256").update(made.body.secret).digest("hex");
    const all = JSON.stringify(await auditOf(reader, ""));
    for (const secret of [made.body.secret, other.body.secret, hash]) expect(all).not.toContain(secret);
  });

  it("docs/api/events.md §Who made a change: the sender deactivating a subscription whose key lost its read scope is the system's change, naming active and disabledReason", async () => {
    const ws = await newWorkspace();
    const key = await keyFor(ws, ["webhooks.manage", "contacts.read"]);
    const sub = await write(
      key.call("POST", "/webhooks", { url: rx.url("/revoked"), events: ["contact.created"] }),
      201,
    );
    const id = sub.body.subscription.id;
    expect((await ws.admin("PATCH", `/keys/${key.keyId}`, { scopes: ["webhooks.manage"] })).status).toBe(200);
    await contact(ws);
    const log = await audited(ws, "webhook", id, 2);
    expect(log.map((e) => [e.type, e.actor, e.requestId, e.changes])).toEqual([
      ["webhook.created", { type: "key", id: key.keyId }, sub.requestId, expect.arrayContaining(["url"])],
      ["webhook.updated", { type: "system", id: null }, null, ["active", "disabledReason"]],
    ]);
  });

  it("docs/api/events.md §Audit: GET /audit: another workspace's entity lists nothing, the same answer as an id that never existed", async () => {
    const mine = await newWorkspace();
    const other = await newWorkspace();
    const theirs = await contact(other);
    await audited(other, "contact", theirs.id, 1);
    const foreign = await mine.call("GET", `/audit?entity=contact&id=${theirs.id}`);
    const unknown = await mine.call("GET", "/audit?entity=contact&id=ct_never_existed");
    expect(foreign.status).toBe(200);
    expect(foreign.body).toEqual({ data: [], nextCursor: null });
    expect(unknown.body).toEqual(foreign.body);
    // Nor does the other workspace's activity show in the whole list: it holds only mine's creation and its key's.
    await audited(mine, "api_key", mine.keyId, 1);
    const whole = (await mine.call("GET", "/audit")).body.data as Entry[];
    expect(whole.map((e) => [e.type, e.entityId])).toEqual([
      ["workspace.created", mine.id],
      ["api_key.created", mine.keyId],
    ]);
  });

  it("docs/api/events.md §Audit: GET /audit: the gateway sends the page the webhooks service wrote as JSON; a caller that does not ask for JSON gets messages of the same entries", async () => {
    const ws = await newWorkspace();
    const c = await contact(ws, { name: 'Zoë "Zé"\nSilva' });
    await write(ws.call("PATCH", `/contacts/${c.id}`, { tags: ["vip", "🚀"] }), 200);
    const listed = await audited(ws, "contact", c.id, 2);
    const res = await fetch(`${gatewayUrl()}/api/v1/audit?entity=contact&id=${c.id}`, {
      headers: { authorization: `Bearer ${ws.key}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await res.json()).toEqual({ data: listed, nextCursor: null });

    const webhooks = createClient(WebhookService, createGrpcTransport({ baseUrl: inject("webhooksUrl") }));
    const asked = { workspaceId: ws.id, entity: "contact", id: c.id, limit: 50 };
    const messages = await webhooks.listAuditEntries(asked);
    expect(messages.dataJson).toBe("");
    expect(messages.data.map((e) => toApiJson(AuditEntrySchema, e))).toEqual(listed);
    const json = await webhooks.listAuditEntries({ ...asked, apiJson: true });
    expect(json.data).toEqual([]);
    expect(JSON.parse(json.dataJson)).toEqual(listed);
  });

  it("docs/api/events.md §Audit: GET /audit: after lists the changes that occurred after an instant; id without entity is 400; limit is 1..500", async () => {
    const ws = await newWorkspace();
    const c = await contact(ws);
    const [created] = await audited(ws, "contact", c.id, 1);
    await write(ws.call("PATCH", `/contacts/${c.id}`, { tags: ["vip"] }), 200);
    await audited(ws, "contact", c.id, 2);
    const later = await ws.call("GET", `/audit?entity=contact&id=${c.id}&after=${created.occurredAt}`);
    expect(later.status).toBe(200);
    expect(later.body.data.map((e: Entry) => [e.type, e.changes])).toEqual([["contact.updated", ["tags"]]]);

    const noEntity = await ws.call("GET", `/audit?id=${c.id}`);
    expect(noEntity.status).toBe(400);
    expect(noEntity.body.error.code).toBe("validation_failed");
    expect((await ws.call("GET", "/audit?entity=planet")).status).toBe(400);
    expect((await ws.call("GET", "/audit?limit=0")).status).toBe(400);
    expect((await ws.call("GET", "/audit?limit=501")).status).toBe(400);
    expect((await ws.call("GET", "/audit?limit=500")).status).toBe(200);
  });

  it("docs/api/conventions.md §Scopes per route: GET /audit needs audit.read", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read", "contacts.write"] });
    const res = await ws.call("GET", "/audit");
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("missing_scope");
  });
});
