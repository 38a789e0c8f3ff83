import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventsSubscriber, keyFor, newWorkspace, type Workspace } from "../helpers.js";
import { contact, deal, member, pipeline, sleep } from "./crm-fixtures.js";

let ws: Workspace;
let other: Workspace;
let events: Awaited<ReturnType<typeof eventsSubscriber>>;
let pl: Awaited<ReturnType<typeof pipeline>>;
let ct: { id: string };

const SINGLE_READ = ["firstHumanTouchAt", "lastHumanTouchAt", "lastActivityAt"];

beforeAll(async () => {
  [ws, other, events] = await Promise.all([newWorkspace(), newWorkspace(), eventsSubscriber()]);
  pl = await pipeline(ws);
  ct = await contact(ws, { utm: { source: "contact-source", campaign: "contact-campaign" } });
  for (const [fieldKey, type, options] of [
    ["budget", "number", undefined],
    ["segment", "select", ["smb", "enterprise"]],
    ["signed", "boolean", undefined],
  ] as const) {
    const res = await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
      entity: "opportunity",
      fieldKey,
      label: fieldKey,
      type,
      ...(options ? { options } : {}),
    });
    expect(res.status).toBe(201);
  }
  const res = await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
    entity: "contact",
    fieldKey: "plan",
    label: "Plan",
    type: "text",
  });
  expect(res.status).toBe(201);
});
afterAll(async () => {
  await events.close();
});

describe("pipelines", () => {
  it("docs/api/admin.md §Routes: POST /workspaces/{ws}/pipelines → 201 pipeline, stages keep order", async () => {
    const p = await pipeline(ws, ["Z", "A", "M"]);
    expect(p.id).toMatch(/^pl_/);
    expect(p.stages.map((s) => [s.name, s.position])).toEqual([
      ["Z", 0],
      ["A", 1],
      ["M", 2],
    ]);
    const list = await ws.call("GET", "/pipelines");
    expect(list.status).toBe(200);
    expect(list.body.nextCursor).toBeNull();
    const found = list.body.data.find((x: { id: string }) => x.id === p.id);
    expect(found).toEqual({ id: p.id, name: p.name, stages: p.stages });
  });

  it("docs/api/admin.md §Routes: a pipeline without stages, or with an unknown field, is a 400", async () => {
    const empty = await ws.admin("POST", `/workspaces/${ws.id}/pipelines`, { name: "x", stages: [] });
    expect(empty.status).toBe(400);
    const extra = await ws.admin("POST", `/workspaces/${ws.id}/pipelines`, {
      name: "x",
      stages: [{ name: "a", won: true }],
    });
    expect(extra.status).toBe(400);
    const unknownWs = await ws.admin("POST", "/workspaces/ws_nope/pipelines", {
      name: "x",
      stages: [{ name: "a" }],
    });
    expect(unknownWs.status).toBe(404);
  });

  it("docs/api/conventions.md §Scopes per route: GET /pipelines needs opportunities.read", async () => {
    const k = await keyFor(ws, ["contacts.read"]);
    expect((await k.call("GET", "/pipelines")).status).toBe(403);
  });
});

describe("POST /opportunities", () => {
  it("docs/api/deals.md §POST /opportunities, rule 1: without stageId the deal lands in the pipeline's first stage", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    expect(d.stageId).toBe(pl.stages[0]!.id);
    expect(d.status).toBe("open");
    expect(d.stageChangedAt).toBe(d.createdAt);
    expect(d.valueCents).toBe(0);
    expect(d.currency).toBe("BRL");
    expect(d.wonAt).toBeNull();
    expect(d.lostAt).toBeNull();
    for (const f of SINGLE_READ) expect(d).not.toHaveProperty(f);
  });

  it("docs/api/deals.md §POST /opportunities: source falls back to utmSource, else null", async () => {
    const explicit = await deal(ws, {
      contactId: ct.id,
      pipelineId: pl.id,
      source: "youtube",
      utmSource: "google",
    });
    expect(explicit.source).toBe("youtube");
    const fallback = await deal(ws, { contactId: ct.id, pipelineId: pl.id, utmSource: "google" });
    expect(fallback.source).toBe("google");
    const none = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    expect(none.source).toBeNull();
  });

  it("docs/api/deals.md §Deal (opportunity): utm is this request's utm values only, never inherited from the contact", async () => {
    const d = await deal(ws, {
      contactId: ct.id,
      pipelineId: pl.id,
      utmMedium: "cpc",
      utmTerm: "crm",
      utmContent: "banner",
    });
    expect(d.utm).toEqual({ source: null, medium: "cpc", campaign: null, term: "crm", content: "banner" });
    const bare = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    expect(bare.utm).toEqual({ source: null, medium: null, campaign: null, term: null, content: null });
  });

  it("docs/api/deals.md §Deal (opportunity): optional fields are stored and returned", async () => {
    const owner = await member(ws);
    const d = await deal(ws, {
      contactId: ct.id,
      pipelineId: pl.id,
      stageId: pl.stages[2]!.id,
      valueCents: 123456789,
      currency: "usd",
      ownerUserId: owner.id,
      temperature: "hot",
      tags: ["a", "b", "a"],
      expectedCloseAt: "2030-01-02T03:04:05-03:00",
      origin: "api",
      url: "https://example.com/deal",
      customFields: { budget: 10.5, segment: "smb" },
    });
    expect(d).toMatchObject({
      stageId: pl.stages[2]!.id,
      valueCents: 123456789,
      currency: "USD",
      ownerUserId: owner.id,
      temperature: "hot",
      tags: ["a", "b"],
      expectedCloseAt: "2030-01-02T06:04:05.000Z",
      origin: "api",
      url: "https://example.com/deal",
      customFields: { budget: 10.5, segment: "smb" },
    });
    const read = await ws.call("GET", `/opportunities/${d.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject(d);
  });

  it("docs/api/conventions.md §Timestamps: years 0001-9999 come back as written, by id and in the list", async () => {
    for (const at of ["0099-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z", "0999-06-15T12:30:00.500Z"]) {
      const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id, expectedCloseAt: at });
      expect(d.expectedCloseAt).toBe(at);
      expect((await ws.call("GET", `/opportunities/${d.id}`)).body.expectedCloseAt).toBe(at);
      const before = new Date(Date.parse(d.createdAt) - 1).toISOString();
      const page = await ws.call("GET", `/opportunities?createdAfter=${before}&limit=500`);
      const listed = page.body.data.find((x: { id: string }) => x.id === d.id);
      expect(listed?.expectedCloseAt ?? "not listed").toBe(at);
    }
  });

  it("docs/api/deals.md §POST /opportunities: contactId, pipelineId, stageId, ownerUserId must exist in the workspace → 422 invalid_reference", async () => {
    const otherPl = await pipeline(other);
    const otherCt = await contact(other);
    const otherMember = await member(other);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ contactId: otherCt.id, pipelineId: pl.id }, "contactId"],
      [{ contactId: "ct_nope", pipelineId: pl.id }, "contactId"],
      [{ contactId: ct.id, pipelineId: otherPl.id }, "pipelineId"],
      [{ contactId: ct.id, pipelineId: pl.id, stageId: otherPl.stages[0]!.id }, "stageId"],
      [{ contactId: ct.id, pipelineId: pl.id, ownerUserId: otherMember.id }, "ownerUserId"],
    ];
    for (const [body, path] of cases) {
      const res = await ws.call("POST", "/opportunities", { title: "x", ...body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe("invalid_reference");
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  });

  it("docs/api/deals.md §POST /opportunities: the stage must belong to the pipeline → 422", async () => {
    const second = await pipeline(ws, ["Only"]);
    const res = await ws.call("POST", "/opportunities", {
      title: "x",
      contactId: ct.id,
      pipelineId: pl.id,
      stageId: second.stages[0]!.id,
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("invalid_reference");
  });

  it("docs/api/deals.md §POST /opportunities: contactId, pipelineId and title are required; unknown fields are a 400", async () => {
    for (const body of [
      { pipelineId: pl.id, title: "x" },
      { contactId: ct.id, title: "x" },
      { contactId: ct.id, pipelineId: pl.id },
      { contactId: ct.id, pipelineId: pl.id, title: "" },
      { contactId: ct.id, pipelineId: pl.id, title: "x", status: "won" },
      { contactId: ct.id, pipelineId: pl.id, title: "x", wonAt: "2024-01-01T00:00:00Z" },
    ]) {
      const res = await ws.call("POST", "/opportunities", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
  });

  it("docs/api/deals.md §Deal (opportunity): valueCents is an integer in minor units, bounded to a safe integer", async () => {
    for (const valueCents of [1.5, "100", -1, 1e20, Number.MAX_SAFE_INTEGER + 2, true]) {
      const res = await ws.call("POST", "/opportunities", {
        title: "x",
        contactId: ct.id,
        pipelineId: pl.id,
        valueCents,
      });
      expect(res.status, String(valueCents)).toBe(400);
    }
    const max = await deal(ws, { contactId: ct.id, pipelineId: pl.id, valueCents: Number.MAX_SAFE_INTEGER });
    expect(max.valueCents).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("docs/api/events.md §Every event type: POST emits opportunity.created with the deal as the API returns it", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id, valueCents: 10 });
    const e = await events.next("opportunity.created", (x) => x.data.id === d.id);
    expect(e.workspaceId).toBe(ws.id);
    expect(e.data).toEqual(d);
  });
});

describe("custom fields on deals (docs/api/deals.md §Deal (opportunity))", () => {
  it("docs/api/contacts.md §Contact: an unknown customFields key is a 400 naming it (contact keys are not deal keys)", async () => {
    const res = await ws.call("POST", "/opportunities", {
      title: "x",
      contactId: ct.id,
      pipelineId: pl.id,
      customFields: { plan: "pro" },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("plan");
    expect(res.body.error.details[0].path).toBe("body.customFields.plan");
  });

  it("docs/api/contacts.md §Contact: a value of the wrong type is a 400 (number, select, boolean)", async () => {
    for (const customFields of [{ budget: "ten" }, { segment: "mid" }, { signed: "yes" }]) {
      const res = await ws.call("POST", "/opportunities", {
        title: "x",
        contactId: ct.id,
        pipelineId: pl.id,
        customFields,
      });
      expect(res.status, JSON.stringify(customFields)).toBe(400);
    }
  });

  it("docs/api/deals.md §PATCH /opportunities/{id}: PATCH merges customFields key by key; a null value removes the key", async () => {
    const d = await deal(ws, {
      contactId: ct.id,
      pipelineId: pl.id,
      customFields: { budget: 1, segment: "smb" },
    });
    const res = await ws.call("PATCH", `/opportunities/${d.id}`, {
      customFields: { budget: null, signed: true },
    });
    expect(res.status).toBe(200);
    expect(res.body.customFields).toEqual({ segment: "smb", signed: true });
    const bad = await ws.call("PATCH", `/opportunities/${d.id}`, { customFields: { nope: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("nope");
  });
});

describe("GET /opportunities/{id}", () => {
  it("docs/api/deals.md §GET /opportunities/{id}: the single read has firstHumanTouchAt, lastHumanTouchAt, lastActivityAt (null: not yet)", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const res = await ws.call("GET", `/opportunities/${d.id}`);
    expect(res.status).toBe(200);
    for (const f of SINGLE_READ) expect(res.body[f]).toBeNull();
  });

  it("docs/api/conventions.md §Errors: another workspace's deal, an unknown id are 404; a huge id is a 4xx", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const foreign = await other.call("GET", `/opportunities/${d.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe("not_found");
    expect((await other.call("PATCH", `/opportunities/${d.id}`, { title: "stolen" })).status).toBe(404);
    expect((await other.call("DELETE", `/opportunities/${d.id}`)).status).toBe(404);
    expect((await other.call("POST", `/opportunities/${d.id}/restore`)).status).toBe(404);
    expect((await ws.call("GET", "/opportunities/opp_nope")).status).toBe(404);
    const huge = await ws.call("GET", `/opportunities/${"x".repeat(5000)}`);
    expect(huge.status).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
  });
});

describe("PATCH /opportunities/{id}", () => {
  it("docs/api/deals.md §PATCH /opportunities/{id}: a stage change moves stageChangedAt and emits opportunity.stage_changed", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    await sleep(5);
    const res = await ws.call("PATCH", `/opportunities/${d.id}`, { stageId: pl.stages[1]!.id });
    expect(res.status).toBe(200);
    expect(res.body.stageId).toBe(pl.stages[1]!.id);
    expect(res.body.stageChangedAt > d.stageChangedAt).toBe(true);
    const e = await events.next("opportunity.stage_changed", (x) => x.data.id === d.id);
    expect(e.data).toEqual(res.body);
    const same = await ws.call("PATCH", `/opportunities/${d.id}`, { stageId: pl.stages[1]!.id });
    expect(same.body.stageChangedAt).toBe(res.body.stageChangedAt);
    expect(same.body.updatedAt).toBe(res.body.updatedAt);
  });

  it("docs/api/deals.md §PATCH /opportunities/{id}: a stage of another pipeline is a 422 invalid_reference", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const second = await pipeline(ws, ["Other"]);
    const res = await ws.call("PATCH", `/opportunities/${d.id}`, { stageId: second.stages[0]!.id });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("invalid_reference");
  });

  it("docs/api/deals.md §PATCH /opportunities/{id}: won sets wonAt (opportunity.won); lost sets lostAt, keeps lossReason (opportunity.lost); open clears both", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const won = await ws.call("PATCH", `/opportunities/${d.id}`, { status: "won" });
    expect(won.status).toBe(200);
    expect(won.body.status).toBe("won");
    expect(won.body.wonAt).not.toBeNull();
    expect(won.body.lostAt).toBeNull();
    expect((await events.next("opportunity.won", (x) => x.data.id === d.id)).data).toEqual(won.body);

    const lost = await ws.call("PATCH", `/opportunities/${d.id}`, { status: "lost", lossReason: "price" });
    expect(lost.body).toMatchObject({ status: "lost", lossReason: "price", wonAt: null });
    expect(lost.body.lostAt).not.toBeNull();
    expect((await events.next("opportunity.lost", (x) => x.data.id === d.id)).data).toEqual(lost.body);

    const reopened = await ws.call("PATCH", `/opportunities/${d.id}`, { status: "open" });
    expect(reopened.body).toMatchObject({ status: "open", wonAt: null, lostAt: null });
    const updated = await events.next(
      "opportunity.updated",
      (x) => x.data.id === d.id && x.data.status === "open",
    );
    expect(updated.data).toEqual(reopened.body);
  });

  it("docs/api/deals.md §PATCH /opportunities/{id}: won twice keeps the first wonAt and emits opportunity.won once", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    const first = await ws.call("PATCH", `/opportunities/${d.id}`, { status: "won" });
    await sleep(5);
    const again = await ws.call("PATCH", `/opportunities/${d.id}`, { status: "won" });
    expect(again.body.wonAt).toBe(first.body.wonAt);
    await events.next("opportunity.won", (x) => x.data.id === d.id);
    await sleep(300);
    expect(events.all("opportunity.won").filter((x) => x.data.id === d.id)).toHaveLength(0);
  });

  it("docs/api/deals.md §PATCH /opportunities/{id}: absent = untouched, null = cleared; tags replaced; utm merged", async () => {
    const d = await deal(ws, {
      contactId: ct.id,
      pipelineId: pl.id,
      temperature: "warm",
      tags: ["x"],
      utmSource: "google",
      utmMedium: "cpc",
      source: "lp",
    });
    const res = await ws.call("PATCH", `/opportunities/${d.id}`, {
      temperature: null,
      tags: ["y", "z"],
      utm: { medium: null, campaign: "black-friday" },
      valueCents: 500,
      title: "Renamed",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      title: "Renamed",
      temperature: null,
      tags: ["y", "z"],
      valueCents: 500,
      source: "lp",
      utm: { source: "google", medium: null, campaign: "black-friday", term: null, content: null },
    });
  });

  it("docs/api/conventions.md §Errors: PATCH bad input is a 400 (status value, title null, unknown field, string valueCents)", async () => {
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    for (const body of [
      { status: "closed" },
      { title: null },
      { title: "" },
      { pipelineId: pl.id },
      { valueCents: "5" },
      { expectedCloseAt: "tomorrow" },
      { utm: { source: 1 } },
      { utm: { nope: "x" } },
    ]) {
      const res = await ws.call("PATCH", `/opportunities/${d.id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });

  it("docs/api/conventions.md §Scopes per route: writes need opportunities.write; reads opportunities.read", async () => {
    const readOnly = await keyFor(ws, ["opportunities.read"]);
    const d = await deal(ws, { contactId: ct.id, pipelineId: pl.id });
    expect((await readOnly.call("GET", `/opportunities/${d.id}`)).status).toBe(200);
    expect((await readOnly.call("PATCH", `/opportunities/${d.id}`, { title: "x" })).status).toBe(403);
    expect((await readOnly.call("DELETE", `/opportunities/${d.id}`)).status).toBe(403);
    expect(
      (await readOnly.call("POST", "/opportunities", { title: "x", contactId: ct.id, pipelineId: pl.id }))
        .status,
    ).toBe(403);
    const writeOnly = await keyFor(ws, ["opportunities.write"]);
    expect((await writeOnly.call("GET", "/opportunities")).status).toBe(403);
  });
});

describe("trash and restore", () => {
  it("docs/api/deals.md §DELETE /opportunities/{id} and POST /opportunities/{id}/restore: DELETE → 204; trashed deals 404 on read, absent from lists; restore brings it back", async () => {
    const c = await contact(ws);
    const d = await deal(ws, { contactId: c.id, pipelineId: pl.id });
    const del = await ws.call("DELETE", `/opportunities/${d.id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expect((await events.next("opportunity.trashed", (x) => x.data.id === d.id)).data.id).toBe(d.id);
    expect((await ws.call("GET", `/opportunities/${d.id}`)).status).toBe(404);
    expect((await ws.call("PATCH", `/opportunities/${d.id}`, { title: "x" })).status).toBe(404);
    expect((await ws.call("DELETE", `/opportunities/${d.id}`)).status).toBe(404);
    const list = await ws.call("GET", `/opportunities?contactId=${c.id}`);
    expect(list.body.data).toEqual([]);

    const restored = await ws.call("POST", `/opportunities/${d.id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body.id).toBe(d.id);
    expect((await events.next("opportunity.restored", (x) => x.data.id === d.id)).data).toEqual(
      restored.body,
    );
    expect((await ws.call("GET", `/opportunities/${d.id}`)).status).toBe(200);
    const again = await ws.call("GET", `/opportunities?contactId=${c.id}`);
    expect(again.body.data.map((x: { id: string }) => x.id)).toEqual([d.id]);
    expect((await ws.call("POST", `/opportunities/${d.id}/restore`)).status).toBe(200);
    expect((await ws.call("POST", "/opportunities/opp_nope/restore")).status).toBe(404);
  });
});

describe("GET /opportunities filters", () => {
  // A workspace of its own, so the expected sets are exactly known.
  let fw: Workspace;
  let fp: Awaited<ReturnType<typeof pipeline>>;
  let fp2: Awaited<ReturnType<typeof pipeline>>;
  let c1: { id: string };
  let c2: { id: string };
  // biome-ignore lint/suspicious/noExplicitAny: API bodies
  let all: any[];

  const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((d) => d.id);

  beforeAll(async () => {
    fw = await newWorkspace();
    [fp, fp2, c1, c2] = await Promise.all([pipeline(fw), pipeline(fw, ["A", "B"]), contact(fw), contact(fw)]);
    all = [];
    for (let i = 0; i < 6; i++) {
      all.push(await deal(fw, { contactId: i % 2 ? c2.id : c1.id, pipelineId: i < 4 ? fp.id : fp2.id }));
      await sleep(3);
    }
    // deal 1 won, deal 2 lost, deal 3 moved to stage 2, deal 5 trashed.
    all[1] = (await fw.call("PATCH", `/opportunities/${all[1].id}`, { status: "won" })).body;
    await sleep(3);
    all[2] = (await fw.call("PATCH", `/opportunities/${all[2].id}`, { status: "lost" })).body;
    await sleep(3);
    all[3] = (await fw.call("PATCH", `/opportunities/${all[3].id}`, { stageId: fp.stages[1]!.id })).body;
    expect((await fw.call("DELETE", `/opportunities/${all[5].id}`)).status).toBe(204);
    all.pop();
  });

  it("docs/api/conventions.md §Lists and pagination: without filters, every live deal in (createdAt, id) order, items without single-read fields", async () => {
    const res = await fw.call("GET", "/opportunities");
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual(all.map((d) => d.id));
    expect(res.body.nextCursor).toBeNull();
    for (const item of res.body.data) for (const f of SINGLE_READ) expect(item).not.toHaveProperty(f);
  });

  it("docs/api/deals.md §GET /opportunities: pipelineId, stageId, status, contactId filters", async () => {
    expect(ids(await fw.call("GET", `/opportunities?pipelineId=${fp2.id}`))).toEqual([all[4].id]);
    expect(ids(await fw.call("GET", `/opportunities?stageId=${fp.stages[1]!.id}`))).toEqual([all[3].id]);
    expect(ids(await fw.call("GET", "/opportunities?status=won"))).toEqual([all[1].id]);
    expect(ids(await fw.call("GET", "/opportunities?status=lost"))).toEqual([all[2].id]);
    expect(ids(await fw.call("GET", "/opportunities?status=open"))).toEqual([
      all[0].id,
      all[3].id,
      all[4].id,
    ]);
    expect(ids(await fw.call("GET", `/opportunities?contactId=${c2.id}`))).toEqual([all[1].id, all[3].id]);
    expect(ids(await fw.call("GET", `/opportunities?contactId=${c1.id}&pipelineId=${fp.id}`))).toEqual([
      all[0].id,
      all[2].id,
    ]);
    expect(ids(await fw.call("GET", "/opportunities?pipelineId=pl_nope"))).toEqual([]);
  });

  it("docs/api/deals.md §GET /opportunities: createdAfter is strictly later, createdBefore strictly earlier", async () => {
    const pivot = all[2].createdAt;
    const after = ids(await fw.call("GET", `/opportunities?createdAfter=${encodeURIComponent(pivot)}`));
    expect(after).toEqual(all.filter((d) => d.createdAt > pivot).map((d) => d.id));
    expect(after).not.toContain(all[2].id);
    const before = ids(await fw.call("GET", `/opportunities?createdBefore=${encodeURIComponent(pivot)}`));
    expect(before).toEqual(all.filter((d) => d.createdAt < pivot).map((d) => d.id));
    expect(before).not.toContain(all[2].id);
  });

  it("docs/api/deals.md §GET /opportunities; docs/api/conventions.md §Lists and pagination: updatedAfter (strict) orders by (updatedAt, id); updatedBefore strict", async () => {
    const pivot = all[0].updatedAt;
    const res = await fw.call("GET", `/opportunities?updatedAfter=${encodeURIComponent(pivot)}`);
    const expected = all
      .filter((d) => d.updatedAt > pivot)
      .sort((a, b) =>
        a.updatedAt === b.updatedAt ? (a.id < b.id ? -1 : 1) : a.updatedAt < b.updatedAt ? -1 : 1,
      )
      .map((d) => d.id);
    expect(ids(res)).toEqual(expected);
    expect(ids(res).at(-1)).toBe(all[3].id);
    const before = ids(
      await fw.call("GET", `/opportunities?updatedBefore=${encodeURIComponent(all[3].updatedAt)}`),
    );
    expect(before).toEqual(all.filter((d) => d.updatedAt < all[3].updatedAt).map((d) => d.id));
    expect(before).not.toContain(all[3].id);
  });

  it("docs/api/deals.md §GET /opportunities: wonAfter/wonBefore and lostAfter/lostBefore match only won / lost deals, strictly", async () => {
    const epoch = "1970-01-01T00:00:00.000Z";
    const future = "2999-01-01T00:00:00.000Z";
    expect(ids(await fw.call("GET", `/opportunities?wonAfter=${epoch}`))).toEqual([all[1].id]);
    expect(ids(await fw.call("GET", `/opportunities?wonBefore=${future}`))).toEqual([all[1].id]);
    expect(ids(await fw.call("GET", `/opportunities?lostAfter=${epoch}`))).toEqual([all[2].id]);
    expect(ids(await fw.call("GET", `/opportunities?lostBefore=${future}`))).toEqual([all[2].id]);
    expect(ids(await fw.call("GET", `/opportunities?wonAfter=${encodeURIComponent(all[1].wonAt)}`))).toEqual(
      [],
    );
    expect(ids(await fw.call("GET", `/opportunities?wonBefore=${encodeURIComponent(all[1].wonAt)}`))).toEqual(
      [],
    );
    expect(
      ids(await fw.call("GET", `/opportunities?lostAfter=${encodeURIComponent(all[2].lostAt)}`)),
    ).toEqual([]);
    expect(ids(await fw.call("GET", `/opportunities?wonAfter=${epoch}&lostAfter=${epoch}`))).toEqual([]);
  });

  it("docs/api/deals.md §GET /opportunities: stageChangedAfter filters by stageChangedAt (strict)", async () => {
    const pivot = all[4].stageChangedAt;
    const res = ids(await fw.call("GET", `/opportunities?stageChangedAfter=${encodeURIComponent(pivot)}`));
    expect(res).toEqual([all[3].id]);
    const exact = ids(
      await fw.call("GET", `/opportunities?stageChangedAfter=${encodeURIComponent(all[3].stageChangedAt)}`),
    );
    expect(exact).toEqual([]);
  });

  it("docs/api/conventions.md §Timestamps: bad filter values are a 400 (timestamp, status, unknown parameter, huge id)", async () => {
    for (const q of [
      "createdAfter=yesterday",
      "wonBefore=2024-13-45T00:00:00Z",
      "status=closed",
      "nope=1",
      `contactId=${"x".repeat(500)}`,
      "pipelineId=",
    ]) {
      const res = await fw.call("GET", `/opportunities?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
  });
});

describe("GET /opportunities pagination", () => {
  let pw: Workspace;
  // biome-ignore lint/suspicious/noExplicitAny: API bodies
  let created: any[];

  beforeAll(async () => {
    pw = await newWorkspace();
    const [p, c] = await Promise.all([pipeline(pw), contact(pw)]);
    // Concurrent creates: some share a millisecond, so the id tie-break is exercised.
    created = await Promise.all(
      Array.from({ length: 23 }, (_, i) => deal(pw, { contactId: c.id, pipelineId: p.id, valueCents: i })),
    );
    created.sort((a, b) =>
      a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1,
    );
  });

  it("docs/api/conventions.md §Lists and pagination: walking the pages returns every deal exactly once, in (createdAt, id) order", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await pw.call("GET", `/opportunities?limit=5${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(5);
      seen.push(...res.body.data.map((d: { id: string }) => d.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(created.map((d) => d.id));
  });

  it("docs/api/conventions.md §Limits: default limit 50; limit 0, 501 and abc are 400", async () => {
    const res = await pw.call("GET", "/opportunities");
    expect(res.body.data).toHaveLength(23);
    for (const limit of ["0", "501", "abc", "-1", "1.5"]) {
      const bad = await pw.call("GET", `/opportunities?limit=${limit}`);
      expect(bad.status, limit).toBe(400);
      expect(bad.body.error.code).toBe("validation_failed");
    }
    expect((await pw.call("GET", "/opportunities?limit=500")).status).toBe(200);
    expect((await pw.call("GET", "/opportunities?limit=1")).body.data).toHaveLength(1);
  });

  it("docs/api/conventions.md §Lists and pagination: a forged cursor, or one reused with other filters, is 400 invalid_cursor", async () => {
    const first = await pw.call("GET", "/opportunities?limit=2&status=open");
    const cursor = first.body.nextCursor;
    expect(cursor).toBeTruthy();
    const forged = Buffer.from(
      JSON.stringify({ l: "opportunities", f: "x", p: ["2020-01-01T00:00:00Z", "a"] }),
    ).toString("base64url");
    for (const q of [
      `cursor=${forged}`,
      "cursor=abc",
      "cursor=%%%",
      `cursor=${cursor}`,
      `cursor=${cursor}&status=won`,
    ]) {
      const res = await pw.call("GET", `/opportunities?limit=2&${q}`);
      expect(res.status, q).toBe(400);
    }
    const contactsCursor = (await pw.call("GET", "/contacts?limit=1")).body.nextCursor;
    if (contactsCursor) {
      const res = await pw.call("GET", `/opportunities?cursor=${contactsCursor}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("invalid_cursor");
    }
    const ok = await pw.call("GET", `/opportunities?limit=2&status=open&cursor=${cursor}`);
    expect(ok.status).toBe(200);
    const wrong = await pw.call("GET", `/opportunities?limit=2&cursor=${cursor}`);
    expect(wrong.body.error.code).toBe("invalid_cursor");
  });
});

describe("nasty inputs never 500", () => {
  it("docs/api/conventions.md §Errors: malformed JSON, arrays, nulls, huge strings, NUL bytes, deep objects → 4xx", async () => {
    const bodies: unknown[] = [
      "{not json",
      "[]",
      "null",
      "42",
      { title: "x".repeat(100_000), contactId: ct.id, pipelineId: pl.id },
      { title: "a\u0000b", contactId: ct.id, pipelineId: pl.id },
      {
        title: "x",
        contactId: ct.id,
        pipelineId: pl.id,
        customFields: { budget: { a: { b: { c: [1, 2, 3] } } } },
      },
      { title: "x", contactId: ["a"], pipelineId: pl.id },
      { title: "x", contactId: ct.id, pipelineId: pl.id, tags: "a" },
      {
        title: "x",
        contactId: ct.id,
        pipelineId: pl.id,
        tags: Array.from({ length: 1000 }, (_, i) => `t${i}`),
      },
      `{"title":"x","contactId":"${ct.id}","pipelineId":"${pl.id}","__proto__":{"polluted":true}}`,
      { title: "x", contactId: ct.id, pipelineId: pl.id, constructor: { prototype: { x: 1 } } },
    ];
    for (const body of bodies) {
      const res = await ws.call("POST", "/opportunities", body);
      expect(res.status, JSON.stringify(body)?.slice(0, 80)).toBeGreaterThanOrEqual(400);
      expect(res.status, JSON.stringify(body)?.slice(0, 80)).toBeLessThan(500);
      expect(res.body.error.code).toBeTruthy();
    }
  });

  it("docs/api/conventions.md §Errors: odd ids in paths and queries → 4xx, never 500", async () => {
    for (const id of ["%00", "'; drop table opportunities; --", "..%2F..%2Fetc", "%F0%9F%92%A9", "a%20b"]) {
      const res = await ws.call("GET", `/opportunities/${id}`);
      expect(res.status, id).toBeGreaterThanOrEqual(400);
      expect(res.status, id).toBeLessThan(500);
    }
    const res = await ws.call("GET", `/opportunities?contactId=${encodeURIComponent("' or 1=1 --")}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });
});
