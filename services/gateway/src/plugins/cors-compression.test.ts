import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { loadConfig } from "@funil/config";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { gatewayConfig } from "../config.js";
import { startGateway } from "../server.js";

/**
 * CORS and compression as the gateway registers them (docs/api/conventions.md §Format,
 * docs/operations.md §Gateway): whole gateways in this process on the test stack's databases, asked
 * through Fastify's inject.
 */
type Gateway = Awaited<ReturnType<typeof startGateway>>;
const started: Gateway[] = [];

function gateway(env: Record<string, string> = {}) {
  return startGateway(
    loadConfig(gatewayConfig, {
      ...process.env,
      FUNIL_ENV: inject("funilEnv"),
      LOG_LEVEL: "silent",
      PORT: "0",
      AUTH_PORT: "0",
      HOST: "127.0.0.1",
      ...env,
    }),
  ).then((gw) => {
    started.push(gw);
    return gw;
  });
}
afterAll(async () => {
  for (const gw of started) await gw.stop();
});

const APP = "https://app.example.com";
const preflight = (gw: Gateway, origin: string) =>
  gw.app.inject({
    method: "OPTIONS",
    url: "/api/v1/contacts",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, idempotency-key",
    },
  });

describe("CORS (docs/operations.md §Gateway: CORS_ORIGINS)", () => {
  let closed: Gateway;
  let listed: Gateway;
  let any: Gateway;
  beforeAll(async () => {
    [closed, listed, any] = await Promise.all([
      gateway(),
      gateway({ CORS_ORIGINS: `${APP}, http://localhost:5173` }),
      gateway({ CORS_ORIGINS: "*" }),
    ]);
  });

  it("off by default: no access-control header whatever the origin, preflights included", async () => {
    const res = await closed.app.inject({ method: "GET", url: "/healthz", headers: { origin: APP } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect((await preflight(closed, APP)).headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("a listed origin gets its own origin back, with the headers a browser may read", async () => {
    const res = await listed.app.inject({ method: "GET", url: "/healthz", headers: { origin: APP } });
    expect(res.headers["access-control-allow-origin"]).toBe(APP);
    expect(res.headers.vary).toMatch(/origin/i);
    const exposed = String(res.headers["access-control-expose-headers"]).split(/,\s*/);
    for (const h of ["x-request-id", "x-ratelimit-remaining", "retry-after", "idempotent-replayed"])
      expect(exposed).toContain(h);
  });

  it("a listed origin's preflight is answered without a key: the methods and headers the API takes", async () => {
    const res = await preflight(listed, APP);
    expect(res.statusCode).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe(APP);
    expect(String(res.headers["access-control-allow-methods"]).split(/,\s*/)).toEqual(
      expect.arrayContaining(["GET", "POST", "PATCH", "DELETE"]),
    );
    expect(String(res.headers["access-control-allow-headers"])).toContain("idempotency-key");
    expect(res.headers["access-control-max-age"]).toBe("600");
  });

  it("an origin not listed gets no CORS answer", async () => {
    const res = await listed.app.inject({
      method: "GET",
      url: "/healthz",
      headers: { origin: "https://evil.example" },
    });
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect(
      (await preflight(listed, "https://evil.example")).headers["access-control-allow-origin"],
    ).toBeUndefined();
  });

  it("* lets any origin in", async () => {
    const res = await any.app.inject({
      method: "GET",
      url: "/healthz",
      headers: { origin: "https://x.test" },
    });
    expect(res.headers["access-control-allow-origin"]).toBe("*");
  });
});

describe("compression (docs/api/conventions.md §Format)", () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway();
  });
  const openapi = (encoding?: string) =>
    gw.app.inject({
      method: "GET",
      url: "/api/v1/openapi.json",
      headers: encoding ? { "accept-encoding": encoding } : {},
    });

  it("an answer over 1 KB is compressed with br or gzip when the client asks, and reads back the same", async () => {
    const plain = await openapi();
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.rawPayload.length).toBeGreaterThan(1024);
    const br = await openapi("br");
    expect(br.headers["content-encoding"]).toBe("br");
    expect(JSON.parse(brotliDecompressSync(br.rawPayload).toString())).toEqual(plain.json());
    const gzip = await openapi("gzip");
    expect(gzip.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(gzip.rawPayload).toString())).toEqual(plain.json());
    expect(gzip.rawPayload.length).toBeLessThan(plain.rawPayload.length / 3);
  });

  it("a small answer is sent as it is, whatever the client accepts", async () => {
    const res = await gw.app.inject({
      method: "GET",
      url: "/healthz",
      headers: { "accept-encoding": "br, gzip" },
    });
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(res.json()).toEqual({ status: "ok" });
  });
});
