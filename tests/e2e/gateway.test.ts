import { request as httpRequest } from "node:http";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AuthService } from "@funil/contracts";
import { describe, expect, inject, it } from "vitest";
import { admin, gatewayUrl, keyFor, newWorkspace, request, withKey } from "../helpers.js";

describe("authentication (docs/api/conventions.md §Authentication and API keys)", () => {
  it("docs/api/conventions.md §Errors (401 unauthorized): missing, malformed, unknown keys → 401 with the error body", async () => {
    const url = `${gatewayUrl()}/api/v1/contacts`;
    for (const authorization of [
      undefined,
      "",
      "Bearer",
      "Basic Zm9vOmJhcg==",
      "Bearer fnl_short",
      `Bearer fnl_${"A".repeat(40)}`,
      `Bearer sk_${"A".repeat(40)}`,
      `Bearer fnl_${"A".repeat(4000)}`,
    ]) {
      const res = await request("GET", url, undefined, authorization === undefined ? {} : { authorization });
      expect(res.status, authorization).toBe(401);
      expect(res.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
    }
  });

  it("docs/api/conventions.md §Authentication and API keys: a key is fnl_ + 40 base62 characters, shown once; a revoked key gets 401 at once", async () => {
    const ws = await newWorkspace();
    expect(ws.key).toMatch(/^fnl_[0-9A-Za-z]{40}$/);
    expect((await ws.call("GET", "/contacts")).status).toBe(200);
    const revoke = await admin("DELETE", `/keys/${ws.keyId}`);
    expect(revoke.status).toBe(204);
    expect((await ws.call("GET", "/contacts")).status).toBe(401);
  });

  it("docs/api/admin.md §Routes: a scope change through PATCH /admin/v1/keys/{id} applies at once (the cache is invalidated)", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read"] });
    expect((await ws.call("GET", "/contacts")).status).toBe(200);
    const patch = await admin("PATCH", `/keys/${ws.keyId}`, { scopes: ["members.read"] });
    expect(patch.status).toBe(200);
    expect(patch.body.scopes).toEqual(["members.read"]);
    expect(patch.body).not.toHaveProperty("secret");
    expect(patch.body).not.toHaveProperty("hash");
    const denied = await ws.call("GET", "/contacts");
    expect(denied.status).toBe(403);
    expect((await ws.call("GET", "/members")).status).toBe(200);
  });

  it("docs/api/conventions.md §Scopes per route (403 missing_scope): every route checks its scope; the details name the scope needed", async () => {
    const ws = await newWorkspace({ scopes: ["members.read"] });
    const cases: Array<[string, string, string[]]> = [
      ["GET", "/contacts", ["contacts.read"]],
      ["GET", "/contacts/ct_x", ["contacts.read"]],
      ["POST", "/contacts", ["contacts.write"]],
      ["PATCH", "/contacts/ct_x", ["contacts.write"]],
      ["POST", "/contacts/ct_x/archive", ["contacts.write"]],
      ["POST", "/contacts/ct_x/unarchive", ["contacts.write"]],
      ["GET", "/custom-fields", ["contacts.read", "opportunities.read"]],
    ];
    for (const [method, path, scopes] of cases) {
      const res = await ws.call(method, path, method === "GET" ? undefined : {});
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code).toBe("missing_scope");
      expect(res.body.error.details.map((d: { message: string }) => d.message)).toEqual(scopes);
    }
    const readOnly = await keyFor(ws, ["contacts.read"]);
    expect((await readOnly.call("POST", "/contacts", { phone: "5511988887777" })).status).toBe(403);
    const fields = await keyFor(ws, ["opportunities.read"]);
    expect((await fields.call("GET", "/custom-fields")).status).toBe(200);
  });

  it("docs/api/conventions.md §Authentication and API keys: the workspace comes from the key, never from the request", async () => {
    const a = await newWorkspace();
    const b = await newWorkspace();
    const mine = await a.call("POST", "/contacts", { phone: "+55 21 90000-1111" });
    const spoof = await b.call("GET", `/contacts/${mine.body.id}?workspaceId=${a.id}`, undefined, {
      "x-workspace-id": a.id,
    });
    expect(spoof.status).toBe(404);
    const body = await b.call("POST", "/contacts", { phone: "+55 21 90000-1111", workspaceId: a.id });
    expect(body.status).toBe(400);
  });
});

describe("admin API (docs/api/admin.md §Routes)", () => {
  it("needs ADMIN_TOKEN: anything else is 401", async () => {
    for (const authorization of [
      undefined,
      "Bearer wrong-token-0123456789",
      `Bearer ${inject("adminToken")}x`,
    ]) {
      const res = await request(
        "POST",
        `${gatewayUrl()}/admin/v1/workspaces`,
        { name: "x" },
        authorization ? { authorization } : {},
      );
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("unauthorized");
    }
  });

  it("creates workspaces, keys (secret once), members (deactivated ones still listed) and custom fields", async () => {
    const ws = await admin("POST", "/workspaces", { name: "Admin test", operator: true });
    expect(ws.status).toBe(201);
    expect(ws.body).toMatchObject({ name: "Admin test", operator: true, id: expect.stringMatching(/^ws_/) });
    const key = await admin("POST", `/workspaces/${ws.body.id}/keys`, {
      name: "k",
      scopes: ["members.read", "members.read"],
    });
    expect(key.status).toBe(201);
    expect(key.body.key).toMatchObject({
      name: "k",
      scopes: ["members.read"],
      prefix: key.body.secret.slice(0, 8),
    });
    const m = await admin("POST", `/workspaces/${ws.body.id}/members`, {
      name: "Ana",
      email: "ana@x.io",
      role: "atendente",
    });
    expect(m.status).toBe(201);
    expect(m.body).toMatchObject({ name: "Ana", role: "atendente", active: true });
    const custom = await admin("POST", `/workspaces/${ws.body.id}/members`, {
      name: "Bo",
      email: "bo@x.io",
      role: "Closer sênior",
    });
    expect(custom.body.role).toBe("Closer sênior");
    const off = await admin("PATCH", `/workspaces/${ws.body.id}/members/${m.body.id}`, { active: false });
    expect(off.body.active).toBe(false);
    const members = await withKey(ws.body.id, key.body.secret).call("GET", "/members");
    expect(members.body.nextCursor).toBeNull();
    expect(members.body.data).toEqual([
      expect.objectContaining({
        id: m.body.id,
        active: false,
        email: "ana@x.io",
        createdAt: expect.any(String),
      }),
      expect.objectContaining({ id: custom.body.id, active: true }),
    ]);
    const dupe = await admin("POST", `/workspaces/${ws.body.id}/members`, {
      name: "Ana 2",
      email: "ANA@x.io",
      role: "owner",
    });
    expect(dupe.status).toBe(409);
  });

  it("rejects bad input and unknown workspaces with clear codes", async () => {
    expect((await admin("POST", "/workspaces", {})).status).toBe(400);
    expect((await admin("POST", "/workspaces", { name: "x", extra: 1 })).status).toBe(400);
    const nows = await admin("POST", "/workspaces/ws_nope/keys", { name: "k", scopes: [] });
    expect(nows.status).toBe(404);
    expect(nows.body.error.code).toBe("not_found");
    const ws = await newWorkspace();
    expect((await admin("POST", `/workspaces/${ws.id}/keys`, { name: "k", scopes: ["root"] })).status).toBe(
      400,
    );
    expect((await admin("PATCH", "/keys/key_nope", { scopes: [] })).status).toBe(404);
    expect((await admin("DELETE", "/keys/key_nope")).status).toBe(404);
    const cf = (body: unknown) => admin("POST", `/workspaces/${ws.id}/custom-fields`, body);
    expect((await cf({ entity: "contact", fieldKey: "1bad", label: "x", type: "text" })).status).toBe(400);
    expect((await cf({ entity: "deal", fieldKey: "ok", label: "x", type: "text" })).status).toBe(400);
    expect((await cf({ entity: "contact", fieldKey: "sel", label: "x", type: "select" })).status).toBe(400);
    expect((await cf({ entity: "contact", fieldKey: "ok", label: "x", type: "text" })).status).toBe(201);
    const dupe = await cf({ entity: "contact", fieldKey: "ok", label: "x", type: "text" });
    expect(dupe.status).toBe(409);
    expect((await cf({ entity: "opportunity", fieldKey: "ok", label: "x", type: "number" })).status).toBe(
      201,
    );
    const list = await ws.call("GET", "/custom-fields?entity=contact");
    expect(
      list.body.data.map((f: { fieldKey: string; entity: string }) => `${f.entity}:${f.fieldKey}`),
    ).toEqual(["contact:ok"]);
    expect((await ws.call("GET", "/custom-fields")).body.data).toHaveLength(2);
    expect((await ws.call("GET", "/custom-fields?entity=deal")).status).toBe(400);
  });
});

describe("operations endpoints (docs/api/conventions.md §Errors)", () => {
  it("x-request-id is echoed when given and generated otherwise", async () => {
    const given = await request("GET", `${gatewayUrl()}/healthz`, undefined, { "x-request-id": "req-123" });
    expect(given.headers.get("x-request-id")).toBe("req-123");
    const made = await request("GET", `${gatewayUrl()}/api/v1/contacts`);
    expect(made.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("/healthz, /readyz, /metrics with request counts and latency by route and status", async () => {
    expect((await request("GET", `${gatewayUrl()}/healthz`)).status).toBe(200);
    await request("GET", `${gatewayUrl()}/api/v1/contacts`);
    const metrics = await fetch(`${gatewayUrl()}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(
      /funil_http_requests_total\{method="GET",route="\/api\/v1\/contacts",status="401"\} \d+/,
    );
    expect(metrics).toContain("funil_http_request_duration_seconds_bucket");
  });

  it("docs/operations.md §Readiness and liveness, §Metrics: /readyz names every dependency; /metrics shows each service's outbox and its dependencies", async () => {
    const ready = await request("GET", `${gatewayUrl()}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: "ready",
      checks: {
        postgresql: { ok: true, required: true },
        redis: { ok: true, required: false },
        nats: { ok: true, required: false },
        crm: {
          ok: true,
          required: true,
          dependencies: {
            postgresql: { ok: true, required: true },
            nats: { ok: true, required: false },
          },
        },
        timeline: {
          ok: true,
          required: true,
          dependencies: {
            postgresql: { ok: true, required: true },
            nats: { ok: true, required: false },
          },
        },
        scheduling: {
          ok: true,
          required: true,
          dependencies: {
            postgresql: { ok: true, required: true },
            nats: { ok: true, required: false },
            redis: { ok: true, required: false },
          },
        },
        webhooks: {
          ok: true,
          required: true,
          dependencies: {
            postgresql: { ok: true, required: true },
            nats: { ok: true, required: false },
          },
        },
        learning: {
          ok: true,
          required: true,
          dependencies: {
            postgresql: { ok: true, required: true },
            nats: { ok: true, required: false },
          },
        },
      },
    });
    const metrics = await fetch(`${gatewayUrl()}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/funil_service_up\{service="crm"\} 1/);
    // Calls per address of each service (its copies): the health checks above went to crm's one copy.
    expect(metrics).toMatch(
      /funil_rpc_client_address_calls_total\{service="crm",address="127\.0\.0\.1:\d+"\} [1-9]/,
    );
    expect(metrics).toMatch(/funil_dependency_up\{service="crm",dependency="nats"\} 1/);
    expect(metrics).toMatch(/funil_dependency_up\{service="scheduling",dependency="redis"\} 1/);
    expect(metrics).toMatch(/funil_outbox_backlog\{service="crm"\} \d+/);
    expect(metrics).toMatch(/funil_outbox_oldest_age_seconds\{service="crm"\} [\d.e-]+/);
    expect(metrics).toMatch(/funil_outbox_publish_failures_total\{service="crm"\} \d+/);
    expect(metrics).toMatch(
      /funil_consumer_redeliveries_total\{service="timeline",consumer="timeline-inbox"\} \d+/,
    );
    expect(metrics).toMatch(/funil_consumer_pending\{service="timeline",consumer="timeline-events"\} \d+/);
    expect(metrics).toMatch(/funil_service_up\{service="webhooks"\} 1/);
    expect(metrics).toMatch(/funil_consumer_pending\{service="webhooks",consumer="webhooks-sender"\} \d+/);
    expect(metrics).toMatch(/funil_service_up\{service="learning"\} 1/);
    expect(metrics).toMatch(/funil_consumer_pending\{service="learning",consumer="learning-platform"\} \d+/);
    expect(metrics).toContain("funil_consumer_lag_seconds");
  });

  it("/api/v1/openapi.json is OpenAPI 3.1 generated from the zod schemas; /docs serves the reference", async () => {
    const doc = await request("GET", `${gatewayUrl()}/api/v1/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe("3.1.0");
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(["/api/v1/contacts", "/api/v1/contacts/{id}"]),
    );
    const list = doc.body.paths["/api/v1/contacts"].get;
    expect(list.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining([
        "query",
        "email",
        "phone",
        "tag",
        "status",
        "createdAfter",
        "updatedAfter",
        "cursor",
        "limit",
      ]),
    );
    expect(Object.keys(doc.body.paths).some((p) => p.startsWith("/admin"))).toBe(true);
    const docs = await fetch(`${gatewayUrl()}/docs`);
    expect(docs.status).toBe(200);
  });

  it("an unknown route is a 404 with the error body; malformed JSON is a 400", async () => {
    const ws = await newWorkspace();
    const res = await ws.call("GET", "/nothing-here");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("not_found");
    const bad = await ws.call("POST", "/contacts", "{not json", { "content-type": "application/json" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("validation_failed");
    // The limit is judged from content-length before the body is read: the client sends only the headers,
    // so the answer cannot race a write the server has stopped reading (EPIPE).
    const huge = await bodyLimitAnswer(`${gatewayUrl()}/api/v1/contacts`, ws.key, 2 * 1024 * 1024);
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body).error.code).toBe("payload_too_large");
  });

  it("the router's own failures (bad percent-encoding, an id of thousands of characters) answer 400 with the error body", async () => {
    const ws = await newWorkspace();
    for (const path of [
      "/contacts/%E0%A4%A",
      `/contacts/${"a".repeat(300)}`,
      `/contacts/${"a".repeat(5000)}`,
    ]) {
      const res = await ws.call("GET", path);
      expect(res.status, path.slice(0, 30)).toBe(400);
      expect(res.body.error.code).toBe("validation_failed");
    }
  });
});

describe("internal Auth service (docs/api/webhooks.md §Scope revoked)", () => {
  it("answers a key's current scopes and workspace, uncached: a revocation shows at once", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read", "webhooks.manage"] });
    const auth = createClient(AuthService, createGrpcTransport({ baseUrl: inject("authUrl") }));
    const before = await auth.getKey({ keyId: ws.keyId });
    expect(before).toMatchObject({
      active: true,
      workspaceId: ws.id,
      scopes: ["contacts.read", "webhooks.manage"],
      operator: false,
    });
    await admin("PATCH", `/keys/${ws.keyId}`, { scopes: ["webhooks.manage"] });
    expect((await auth.getKey({ keyId: ws.keyId })).scopes).toEqual(["webhooks.manage"]);
    await admin("DELETE", `/keys/${ws.keyId}`);
    expect((await auth.getKey({ keyId: ws.keyId })).active).toBe(false);
    expect((await auth.getKey({ keyId: "key_unknown" })).active).toBe(false);
  });
});

/** POSTs headers announcing `length` bytes, writes none, and returns the answer. */
function bodyLimitAnswer(url: string, key: string, length: number) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "content-length": length,
      },
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.flushHeaders();
  });
}
