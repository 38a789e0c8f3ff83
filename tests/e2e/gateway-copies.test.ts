import { loadConfig } from "@funil/config";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { gatewayConfig } from "../../services/gateway/src/config.js";
import { startGateway } from "../../services/gateway/src/server.js";
import { newWorkspace, request } from "../helpers.js";

/** A second gateway on the test databases with a tiny per-key limit. */
let gateway: Awaited<ReturnType<typeof startGateway>>;
beforeAll(async () => {
  gateway = await startGateway(
    loadConfig(gatewayConfig, {
      ...process.env,
      FUNIL_ENV: "test",
      LOG_LEVEL: "silent",
      PORT: "0",
      AUTH_PORT: "0",
      HOST: "127.0.0.1",
      CRM_URL: inject("crmUrl"),
      RATE_LIMIT_MAX: "3",
      RATE_LIMIT_WINDOW_MS: "60000",
    }),
  );
});
afterAll(async () => {
  await gateway.stop();
});

describe("API §1 rate_limited", () => {
  it("limits per key: the 4th request in the window is a 429 with retry-after; another key is unaffected", async () => {
    const a = await newWorkspace({ scopes: ["contacts.read"] });
    const b = await newWorkspace({ scopes: ["contacts.read"] });
    const get = (key: string) =>
      request("GET", `${gateway.url}/api/v1/contacts`, undefined, { authorization: `Bearer ${key}` });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(a.key)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await get(a.key);
    expect(limited.body.error.code).toBe("rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await get(b.key)).status).toBe(200);
  });
});
