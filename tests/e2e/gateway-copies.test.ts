import { connect, createServer, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { admin, type GatewayCopy, gatewayCopy, newWorkspace, request } from "../helpers.js";

const copy = gatewayCopy;

let limited: GatewayCopy;
let cached: GatewayCopy;
beforeAll(async () => {
  [limited, cached] = await Promise.all([
    copy({ RATE_LIMIT_MAX: "3", RATE_LIMIT_WINDOW_MS: "60000" }),
    copy({ KEY_CACHE_TTL_MS: "3600000" }),
  ]);
});
afterAll(async () => {
  await Promise.all([limited?.stop(), cached?.stop()]);
});

const get = (base: string, key: string, path = "/api/v1/contacts") =>
  request("GET", `${base}${path}`, undefined, { authorization: `Bearer ${key}` });

describe("docs/api/conventions.md §Rate limits", () => {
  it("limits per key: the 4th request in the window is a 429 with retry-after; another key is unaffected", async () => {
    const a = await newWorkspace({ scopes: ["contacts.read"] });
    const b = await newWorkspace({ scopes: ["contacts.read"] });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(limited.url, a.key)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const res = await get(limited.url, a.key);
    expect(res.body.error.code).toBe("rate_limited");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await get(limited.url, b.key)).status).toBe(200);
  });
});

describe("key cache across gateway copies (docs/api/conventions.md §Authentication and API keys: prompt invalidation)", () => {
  it("a key revoked through one copy is refused at once by another copy that had it cached for an hour", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read"] });
    expect((await get(cached.url, ws.key)).status).toBe(200);
    expect((await admin("PATCH", `/keys/${ws.keyId}`, { scopes: ["members.read"] })).status).toBe(200);
    await expect.poll(async () => (await get(cached.url, ws.key)).status, { timeout: 2000 }).toBe(403);
    expect((await admin("DELETE", `/keys/${ws.keyId}`)).status).toBe(204);
    await expect
      .poll(async () => (await get(cached.url, ws.key, "/api/v1/members")).status, { timeout: 2000 })
      .toBe(401);
  });
});

describe("dependency outage (docs/api/conventions.md §Outages and retries: 503, safe to retry)", () => {
  it("a gateway whose crm is unreachable answers 503 unavailable, and /readyz says so", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read"] });
    const orphan = await copy({ CRM_URL: "http://127.0.0.1:9", UPSTREAM_TIMEOUT_MS: "2000" });
    try {
      const res = await get(orphan.url, ws.key);
      expect(res.status).toBe(503);
      expect(res.body.error).toEqual({ code: "unavailable", message: expect.any(String) });
      const ready = await request("GET", `${orphan.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.error.message).toContain("crm");
      // An orchestrator's readiness probe asks about this copy alone: a service that is down must not
      // take every gateway copy out of the balancer, since they still serve the other services' routes.
      const self = await request("GET", `${orphan.url}/readyz?scope=self`);
      expect(self.status).toBe(200);
      expect(self.body).toEqual({ status: "ready", checks: { postgresql: { ok: true, required: true } } });
    } finally {
      await orphan.stop();
    }
  });

  it("stop() lets requests in flight finish before closing (graceful shutdown)", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read"] });
    // crm behind a proxy that holds every packet 1.5 s, so the requests are surely in flight at stop().
    const proxy = await slowProxy(new URL(inject("crmUrl")).port, 1500);
    const gw = await copy({ CRM_URL: `http://127.0.0.1:${proxy.port}` });
    try {
      const inFlight = Promise.all(Array.from({ length: 5 }, () => get(gw.url, ws.key)));
      await new Promise((r) => setTimeout(r, 700));
      const stopped = gw.stop();
      expect((await inFlight).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      await stopped;
      await expect(get(gw.url, ws.key)).rejects.toThrow();
    } finally {
      proxy.close();
    }
  });
});

function slowProxy(targetPort: string, delayMs: number): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(targetPort), "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
    }
    client.on("data", (d) => setTimeout(() => upstream.write(d), delayMs));
    upstream.on("data", (d) => client.write(d));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as { port: number }).port,
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

describe("docs/api/conventions.md §Rate limits: rate_limited across gateway copies (no Redis round trip per request)", () => {
  it("two copies share one budget: all together admit at most RATE_LIMIT_MAX + burst per extra copy, with x-ratelimit headers", async () => {
    const [a, b] = await Promise.all([
      copy({ RATE_LIMIT_MAX: "40", RATE_LIMIT_WINDOW_MS: "60000" }),
      copy({ RATE_LIMIT_MAX: "40", RATE_LIMIT_WINDOW_MS: "60000" }),
    ]);
    try {
      const ws = await newWorkspace({ scopes: ["contacts.read"] });
      const answers = [];
      for (let i = 0; i < 50; i++) {
        const batch = await Promise.all([get(a.url, ws.key), get(b.url, ws.key)]);
        answers.push(...batch);
      }
      const admitted = answers.filter((r) => r.status === 200).length;
      // burst = max(1, ⌊40 / 20⌋) = 2: at most 40 + 2 across two copies.
      expect(admitted).toBeGreaterThanOrEqual(40);
      expect(admitted).toBeLessThanOrEqual(42);
      expect(answers.filter((r) => r.status !== 200).every((r) => r.status === 429)).toBe(true);
      const first = answers[0]!;
      expect(first.headers.get("x-ratelimit-limit")).toBe("40");
      expect(Number(first.headers.get("x-ratelimit-remaining"))).toBeLessThan(40);
      expect(Number(first.headers.get("x-ratelimit-reset"))).toBeGreaterThan(0);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
