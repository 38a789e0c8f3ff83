import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { parseCopies, startStack } from "../../scripts/stack.mjs";
import { newWorkspace, request } from "../helpers.js";
import { stackEnv } from "../private-stack.js";

interface Copy {
  index: number;
  port: number;
  url: string;
  pid: number | undefined;
  running: boolean;
}

/**
 * A second, small stack on the test stack's databases and streams, run in copies (crm 2 and a spare,
 * gateway 2), driven through the API that `npm start` and the scale tests use.
 */
// biome-ignore lint/suspicious/noExplicitAny: the plain-JS stack API
let stack: any;
beforeAll(async () => {
  const env = stackEnv({
    FUNIL_ENV: inject("funilEnv"),
    NATS_URL: inject("natsUrl"),
    LOG_LEVEL: "warn",
    // A frozen copy is noticed within two PING periods (the last test).
    RPC_KEEPALIVE_MS: "500",
  });
  stack = await startStack({
    env,
    port: 0,
    stdio: process.env.STACK_LOG ?? "ignore",
    copies: { crm: 2, gateway: 2 },
    spareCopies: { crm: 1 },
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });

async function serves(url: string) {
  const ws = await newWorkspace({ scopes: ["contacts.read", "contacts.write"] });
  const auth = { authorization: `Bearer ${ws.key}` };
  const created = await request(
    "POST",
    `${url}/api/v1/contacts`,
    { name: "Copy", phone: `+55 31 9${String(Date.now()).slice(-7)}` },
    auth,
  );
  expect(created.status).toBe(201);
  expect((await request("GET", `${url}/api/v1/contacts/${created.body.id}`, undefined, auth)).status).toBe(
    200,
  );
}

describe("FUNIL_COPIES", () => {
  it("reads name=count pairs; an unknown name or a bad count is a clear error", () => {
    expect(parseCopies("crm=3,timeline=2,gateway=2")).toEqual({ crm: 3, timeline: 2, gateway: 2 });
    expect(parseCopies(undefined)).toEqual({});
    expect(() => parseCopies("billing=2")).toThrow(/unknown name "billing"/);
    expect(() => parseCopies("crm=0")).toThrow(/crm needs a whole number of copies from 1 to 16/);
    expect(() => parseCopies("crm=two")).toThrow(/crm needs a whole number/);
    expect(() => parseCopies("crm")).toThrow(/not name=count/);
  });
});

describe("copies of a service (startStack copies, spareCopies)", () => {
  it("each copy listens on its own port, and <NAME>_URL lists every copy, the spare's reserved address too", async () => {
    const crm: Copy[] = stack.copies("crm");
    expect(crm.map((c) => c.running)).toEqual([true, true, false]);
    expect(new Set(crm.map((c) => c.port)).size).toBe(3);
    expect(stack.env.CRM_URL).toBe(crm.map((c) => c.url).join(","));
    expect(await Promise.all(crm.map((c) => listening(c.port)))).toEqual([true, true, false]);
    const gateways: Copy[] = stack.copies("gateway");
    expect(gateways.map((c) => c.running)).toEqual([true, true]);
    expect(stack.gatewayUrls).toEqual(gateways.map((c) => c.url));
    expect(stack.gatewayUrl).toBe(stack.gatewayUrls[0]);
    expect(stack.env.AUTH_URL.split(",")).toHaveLength(2);
  });

  it("each gateway copy serves the API", async () => {
    for (const url of stack.gatewayUrls) await serves(url);
  });

  it("stopCopy stops one copy for good (exit 0 on SIGTERM) while the others serve; startCopy starts it, or a spare, again", async () => {
    expect(await stack.stopCopy("crm", 0)).toEqual({ code: 0, signal: null });
    expect(stack.copies("crm")[0].running).toBe(false);
    await new Promise((r) => setTimeout(r, 500));
    expect(stack.copies("crm")[0].running).toBe(false);
    for (const url of stack.gatewayUrls) await serves(url);
    await stack.startCopy("crm", 2);
    await stack.startCopy("crm", 0);
    expect(stack.copies("crm").map((c: Copy) => c.running)).toEqual([true, true, true]);

    expect(await stack.stopCopy("gateway", 1)).toEqual({ code: 0, signal: null });
    await stack.startCopy("gateway", 1);
    expect((await request("GET", `${stack.gatewayUrls[1]}/readyz`)).status).toBe(200);
  });

  it("RPC_KEEPALIVE_MS: a crm copy frozen by SIGSTOP is left out within seconds; reads through the gateway keep answering", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read", "contacts.write"] });
    const auth = { authorization: `Bearer ${ws.key}` };
    const phone = `+55 31 8${String(Date.now()).slice(-7)}`;
    const created = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/contacts`,
      { name: "Frozen", phone },
      auth,
    );
    expect(created.status).toBe(201);
    const read = () =>
      request("GET", `${stack.gatewayUrl}/api/v1/contacts/${created.body.id}`, undefined, auth);
    expect(stack.kill("crm", "SIGSTOP", 1)).toBe(true);
    try {
      const started = Date.now();
      // Calls in flight on the frozen copy fail over once its connection misses a PING: the reads all
      // answer, none waits for its deadline.
      const first = await Promise.all(Array.from({ length: 10 }, read));
      expect(first.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(Date.now() - started).toBeLessThan(3000);
      // Left out: the next reads are answered at once by the copies that answer.
      const later = Date.now();
      for (let i = 0; i < 10; i++) expect((await read()).status).toBe(200);
      expect(Date.now() - later).toBeLessThan(1000);
    } finally {
      stack.kill("crm", "SIGCONT", 1);
    }
  });
});
