import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventsSubscriber, keyFor, newWorkspace, type Workspace } from "../helpers.js";
import { contact, deal, member, pipeline } from "./crm-fixtures.js";

let ws: Workspace;
let other: Workspace;
let events: Awaited<ReturnType<typeof eventsSubscriber>>;
let pl: Awaited<ReturnType<typeof pipeline>>;
let ct: { id: string };
let user: { id: string };

beforeAll(async () => {
  [ws, other, events] = await Promise.all([newWorkspace(), newWorkspace(), eventsSubscriber()]);
  [pl, ct, user] = await Promise.all([pipeline(ws), contact(ws), member(ws)]);
});
afterAll(async () => {
  await events.close();
});

describe("tasks", () => {
  it("docs/api/deals.md §POST /tasks: POST /tasks needs only a title → 201 task; task.created carries it", async () => {
    const res = await ws.call("POST", "/tasks", { title: "Call back" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      title: "Call back",
      body: null,
      contactId: null,
      opportunityId: null,
      assigneeUserId: null,
      dueAt: null,
      completedAt: null,
    });
    expect(res.body.id).toMatch(/^tsk_/);
    expect((await events.next("task.created", (e) => e.data.id === res.body.id)).data).toEqual(res.body);
  });

  it("docs/api/deals.md §Task: every optional field is stored; a task about a deal defaults to the deal's contact", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const res = await ws.call("POST", "/tasks", {
      title: "Send proposal",
      body: "with the discount",
      opportunityId: d.id,
      assigneeUserId: user.id,
      dueAt: "2030-05-01T12:00:00+02:00",
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      contactId: ct.id,
      opportunityId: d.id,
      assigneeUserId: user.id,
      body: "with the discount",
      dueAt: "2030-05-01T10:00:00.000Z",
    });
  });

  it("docs/api/deals.md §Task: title is required; unknown fields, bad dueAt, completed on create → 400", async () => {
    for (const body of [
      {},
      { title: "" },
      { title: "   " },
      { title: 5 },
      { title: "x", nope: 1 },
      { title: "x", dueAt: "soon" },
      { title: "x", completed: true },
      { title: "x".repeat(501) },
    ]) {
      const res = await ws.call("POST", "/tasks", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
  });

  it("docs/api/conventions.md §Errors: references of another workspace (or unknown, or a trashed deal) → 422 invalid_reference", async () => {
    const [oc, om] = await Promise.all([contact(other), member(other)]);
    const od = await deal(other, { contactId: oc.id, pipelineId: (await pipeline(other)).id });
    const trashed = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    await ws.call("DELETE", `/opportunities/${trashed.id}`);
    const mine = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const c2 = await contact(ws);
    for (const body of [
      { contactId: oc.id },
      { opportunityId: od.id },
      { assigneeUserId: om.id },
      { contactId: "ct_nope" },
      { opportunityId: trashed.id },
      { opportunityId: mine.id, contactId: c2.id },
    ]) {
      const res = await ws.call("POST", "/tasks", { title: "x", ...body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe("invalid_reference");
    }
  });

  it("docs/api/deals.md §Task: PATCH completed true sets completedAt, false clears it; edits; task.updated", async () => {
    const t = (await ws.call("POST", "/tasks", { title: "x", body: "b" })).body;
    const done = await ws.call("PATCH", `/tasks/${t.id}`, { completed: true });
    expect(done.status).toBe(200);
    expect(done.body.completedAt).not.toBeNull();
    expect((await events.next("task.updated", (e) => e.data.id === t.id)).data).toEqual(done.body);
    const again = await ws.call("PATCH", `/tasks/${t.id}`, { completed: true });
    expect(again.body.completedAt).toBe(done.body.completedAt);
    const reopened = await ws.call("PATCH", `/tasks/${t.id}`, { completed: false, title: "y", body: null });
    expect(reopened.body).toMatchObject({ completedAt: null, title: "y", body: null });
    expect((await ws.call("PATCH", `/tasks/${t.id}`, { title: null })).status).toBe(400);
    expect((await ws.call("PATCH", `/tasks/${t.id}`, { completed: "yes" })).status).toBe(400);
    expect((await ws.call("PATCH", "/tasks/tsk_nope", { title: "z" })).status).toBe(404);
    expect((await other.call("PATCH", `/tasks/${t.id}`, { title: "z" })).status).toBe(404);
  });

  it("docs/api/deals.md §GET /tasks: open=true / open=false filter, assigneeUserId filter, keyset walk", async () => {
    const tw = await newWorkspace();
    const [a, b] = await Promise.all([member(tw), member(tw)]);
    const made: Array<{ id: string }> = [];
    for (let i = 0; i < 7; i++)
      made.push(
        (await tw.call("POST", "/tasks", { title: `t${i}`, assigneeUserId: i % 2 ? a.id : b.id })).body,
      );
    for (const i of [0, 3, 4]) await tw.call("PATCH", `/tasks/${made[i]!.id}`, { completed: true });
    const ids = async (q: string) =>
      (await tw.call("GET", `/tasks?${q}`)).body.data.map((t: { id: string }) => t.id);
    expect(await ids("")).toEqual(made.map((t) => t.id));
    expect(await ids("open=true")).toEqual([1, 2, 5, 6].map((i) => made[i]!.id));
    expect(await ids("open=false")).toEqual([0, 3, 4].map((i) => made[i]!.id));
    expect(await ids(`assigneeUserId=${a.id}`)).toEqual([1, 3, 5].map((i) => made[i]!.id));
    expect(await ids(`assigneeUserId=${a.id}&open=true`)).toEqual([1, 5].map((i) => made[i]!.id));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await tw.call("GET", `/tasks?limit=2&open=true${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((t: { id: string }) => t.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([1, 2, 5, 6].map((i) => made[i]!.id));
    const page = await tw.call("GET", "/tasks?limit=2&open=true");
    const reused = await tw.call("GET", `/tasks?limit=2&open=false&cursor=${page.body.nextCursor}`);
    expect(reused.status).toBe(400);
    expect(reused.body.error.code).toBe("invalid_cursor");
    for (const q of ["open=yes", "open=1", "limit=0", "limit=501", "limit=abc", "nope=1"])
      expect((await tw.call("GET", `/tasks?${q}`)).status, q).toBe(400);
  });

  it("docs/api/conventions.md §Scopes per route: tasks.read to list, tasks.write to create and edit", async () => {
    const r = await keyFor(ws, ["tasks.read"]);
    expect((await r.call("GET", "/tasks")).status).toBe(200);
    expect((await r.call("POST", "/tasks", { title: "x" })).status).toBe(403);
    const w = await keyFor(ws, ["tasks.write"]);
    expect((await w.call("GET", "/tasks")).status).toBe(403);
    expect((await w.call("POST", "/tasks", { title: "x" })).status).toBe(201);
  });
});

describe("notes", () => {
  it("docs/api/deals.md §POST /notes: POST /notes → 201 {id, contactId, opportunityId, body, userId, createdAt} and note.created", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const res = await ws.call("POST", "/notes", {
      contactId: ct.id,
      opportunityId: d.id,
      body: "Talked about pricing",
      userId: user.id,
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      ["id", "contactId", "opportunityId", "body", "userId", "createdAt"].sort(),
    );
    expect(res.body).toMatchObject({ contactId: ct.id, opportunityId: d.id, userId: user.id });
    const e = await events.next("note.created", (x) => x.data.id === res.body.id);
    expect(e.data).toEqual(res.body);
    expect(e.workspaceId).toBe(ws.id);
    const bare = await ws.call("POST", "/notes", { contactId: ct.id, body: "hi", userId: user.id });
    expect(bare.status).toBe(201);
    expect(bare.body.opportunityId).toBeNull();
  });

  it("docs/api/conventions.md §Errors: bad notes → 400; unknown or foreign contact, member, deal → 422", async () => {
    for (const body of [
      { contactId: ct.id, userId: user.id },
      { contactId: ct.id, body: "", userId: user.id },
      { contactId: ct.id, body: "x" },
      { body: "x", userId: user.id },
      { contactId: ct.id, body: "x", userId: user.id, extra: true },
    ]) {
      expect((await ws.call("POST", "/notes", body)).status, JSON.stringify(body)).toBe(400);
    }
    const [oc, om] = await Promise.all([contact(other), member(other)]);
    const otherDeal = await deal(ws, { contactId: (await contact(ws)).id, pipelineId: pl.id });
    for (const body of [
      { contactId: oc.id, body: "x", userId: user.id },
      { contactId: ct.id, body: "x", userId: om.id },
      { contactId: ct.id, body: "x", userId: user.id, opportunityId: "opp_nope" },
      { contactId: ct.id, body: "x", userId: user.id, opportunityId: otherDeal.id },
    ]) {
      const res = await ws.call("POST", "/notes", body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe("invalid_reference");
    }
  });

  it("docs/api/conventions.md §Scopes per route: notes need contacts.write or opportunities.write", async () => {
    const body = { contactId: ct.id, body: "x", userId: user.id };
    expect((await (await keyFor(ws, ["contacts.write"])).call("POST", "/notes", body)).status).toBe(201);
    expect((await (await keyFor(ws, ["opportunities.write"])).call("POST", "/notes", body)).status).toBe(201);
    expect((await (await keyFor(ws, ["tasks.write"])).call("POST", "/notes", body)).status).toBe(403);
  });
});

describe("members", () => {
  it("docs/api/contacts.md §GET /members: it keeps deactivated members (active=false)", async () => {
    const gone = await member(ws, { active: false });
    const res = await ws.call("GET", "/members");
    expect(res.status).toBe(200);
    expect(res.body.data.find((m: { id: string }) => m.id === gone.id)).toMatchObject({ active: false });
  });
});
