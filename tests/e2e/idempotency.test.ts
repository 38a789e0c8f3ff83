import { beforeAll, describe, expect, it } from "vitest";
import { newWorkspace, type Workspace } from "../helpers.js";
import { contact, pipeline } from "./crm-fixtures.js";

let ws: Workspace;
let pl: Awaited<ReturnType<typeof pipeline>>;

let n = 0;
const newKey = () => `key-${Date.now()}-${++n}`;
const post = (body: unknown, key?: string, on = ws) =>
  on.call("POST", "/opportunities", body, key === undefined ? {} : { "idempotency-key": key });
const dealsOf = async (contactId: string, on = ws) =>
  (await on.call("GET", `/opportunities?contactId=${contactId}`)).body.data as Array<{ id: string }>;

beforeAll(async () => {
  ws = await newWorkspace();
  pl = await pipeline(ws);
});

describe("Idempotency-Key on POST /opportunities (docs/api/conventions.md §Idempotency-Key)", () => {
  it("docs/api/conventions.md §Idempotency-Key: the same request again replays the first response with idempotent-replayed: true", async () => {
    const c = await contact(ws);
    const key = newKey();
    const body = { title: "Deal", contactId: c.id, pipelineId: pl.id, valueCents: 100 };
    const first = await post(body, key);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    // Same body with its keys in another order: the same request.
    const again = await post({ valueCents: 100, pipelineId: pl.id, contactId: c.id, title: "Deal" }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await dealsOf(c.id)).toHaveLength(1);
  });

  it("docs/api/conventions.md §Idempotency-Key: the same key with another body → 422 idempotency_key_reused", async () => {
    const c = await contact(ws);
    const key = newKey();
    expect((await post({ title: "A", contactId: c.id, pipelineId: pl.id }, key)).status).toBe(201);
    const other = await post({ title: "B", contactId: c.id, pipelineId: pl.id }, key);
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe("idempotency_key_reused");
    expect(await dealsOf(c.id)).toHaveLength(1);
  });

  it("docs/api/conventions.md §Idempotency-Key: ten concurrent identical requests create exactly one deal", async () => {
    const c = await contact(ws);
    const key = newKey();
    const body = { title: "Race", contactId: c.id, pipelineId: pl.id };
    const results = await Promise.all(Array.from({ length: 10 }, () => post(body, key)));
    const statuses = results.map((r) => r.status);
    for (const s of statuses) expect([201, 409]).toContain(s);
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
    expect(created.filter((r) => r.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    for (const r of results.filter((x) => x.status === 409))
      expect(r.body.error.code).toBe("idempotency_key_in_use");
    expect(await dealsOf(c.id)).toHaveLength(1);
    // Once the first is done, every repeat is a replay.
    const after = await post(body, key);
    expect(after.status).toBe(201);
    expect(after.headers.get("idempotent-replayed")).toBe("true");
    expect(after.body.id).toBe(created[0]!.body.id);
  });

  it("docs/api/conventions.md §Idempotency-Key: a remembered 4xx (422 invalid_reference) is replayed, not retried", async () => {
    const c = await contact(ws);
    const key = newKey();
    const body = { title: "x", contactId: c.id, pipelineId: "pl_nope" };
    const first = await post(body, key);
    expect(first.status).toBe(422);
    expect(first.body.error.code).toBe("invalid_reference");
    const again = await post(body, key);
    expect(again.status).toBe(422);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
  });

  it("docs/api/conventions.md §Idempotency-Key: a 400 validation_failed is not remembered: the key stays free", async () => {
    const c = await contact(ws);
    const key = newKey();
    expect((await post({ title: "x", contactId: c.id, pipelineId: pl.id, valueCents: -5 }, key)).status).toBe(
      400,
    );
    // A custom-field error is validation_failed too, decided in the crm service.
    expect(
      (await post({ title: "x", contactId: c.id, pipelineId: pl.id, customFields: { nope: 1 } }, key)).status,
    ).toBe(400);
    const ok = await post({ title: "x", contactId: c.id, pipelineId: pl.id }, key);
    expect(ok.status).toBe(201);
    expect(ok.headers.get("idempotent-replayed")).toBeNull();
  });

  it("docs/api/conventions.md §Idempotency-Key: keys are scoped to the workspace", async () => {
    const other = await newWorkspace();
    const [pl2, c1, c2] = await Promise.all([pipeline(other), contact(ws), contact(other)]);
    const key = newKey();
    const a = await post({ title: "x", contactId: c1.id, pipelineId: pl.id }, key);
    const b = await post({ title: "x", contactId: c2.id, pipelineId: pl2.id }, key, other);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);
  });

  it("docs/api/conventions.md §Idempotency-Key: without a key every request creates; a malformed key is a 400", async () => {
    const c = await contact(ws);
    const body = { title: "x", contactId: c.id, pipelineId: pl.id };
    expect((await post(body)).status).toBe(201);
    expect((await post(body)).status).toBe(201);
    expect(await dealsOf(c.id)).toHaveLength(2);
    for (const bad of ["k".repeat(256), "has space", "ção"]) {
      const res = await ws.call("POST", "/opportunities", body, { "idempotency-key": bad });
      expect(res.status, bad).toBe(400);
    }
  });
});
