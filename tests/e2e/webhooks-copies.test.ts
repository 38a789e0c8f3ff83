import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { newWorkspace, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, startReceiver } from "../receiver.js";

/**
 * A second copy of the webhooks service beside the stack's (docs/operations.md §Running copies: copies share the durable
 * consumers), killed with SIGKILL in the middle of the retry schedule.
 */
let ws: Workspace;
let rx: Receiver;
let copy: ChildProcess;

function startCopy(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["services/webhooks/dist/main.js"], {
    env: {
      ...process.env,
      FUNIL_ENV: inject("funilEnv"),
      NATS_URL: inject("natsUrl"),
      AUTH_URL: inject("authUrl"),
      WEBHOOKS_PORT: "0",
      LOG_LEVEL: "info",
      WEBHOOK_ALLOW_HTTP: "true",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      WEBHOOK_RETRY_SCHEDULE_MS: "200,400,600,800,1000",
      WEBHOOK_BREAKER_WINDOW_MS: "6000",
      WEBHOOK_TIMEOUT_MS: "1500",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes("webhooks listening")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`the second webhooks copy exited (${code})`)));
  });
}

beforeAll(async () => {
  [ws, rx, copy] = await Promise.all([newWorkspace(), startReceiver(), startCopy()]);
});
afterAll(async () => {
  copy.kill("SIGKILL");
  await rx.close();
});

describe("webhooks: two copies, one killed mid-schedule (docs/operations.md §Running copies)", () => {
  it("docs/api/webhooks.md §What a receiver gets, §Retries: each event is delivered to a subscription exactly once across copies; a SIGKILL loses none and repeats no recorded success", async () => {
    const p = "/copies";
    const sub = await ws.call("POST", "/webhooks", { url: rx.url(p, "fail"), events: ["contact.created"] });
    expect(sub.status).toBe(201);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await ws.call("POST", "/contacts", {
        name: `Copy ${i}`,
        phone: `+55 41 9${Date.now() % 1e6}${i}`,
      });
      ids.push(res.body.id);
    }
    // Both copies are retrying failed attempts: kill one of them in the middle of the schedule.
    await waitFor(async () => (new Set(rx.at(p).map((r) => r.body.data.id)).size === 20 ? true : undefined));
    copy.kill("SIGKILL");
    await new Promise((r) => setTimeout(r, 300));
    rx.set(p, "ok");
    const list = await waitFor(async () => {
      const res = await ws.call("GET", `/webhooks/${sub.body.subscription.id}/deliveries`);
      return res.body.data.length === 20 &&
        res.body.data.every((d: { status: string }) => d.status === "delivered")
        ? res.body.data
        : undefined;
    }, 30_000);
    // One delivery per event, each answered 200 exactly once: a success is never sent again.
    expect(new Set(list.map((d: { id: string }) => d.id)).size).toBe(20);
    const successes = new Map<string, number>();
    for (const r of rx.at(p).filter((r) => r.status === 200)) {
      const key = String(r.headers["x-funil-delivery"]);
      successes.set(key, (successes.get(key) ?? 0) + 1);
    }
    expect([...successes.values()].every((n) => n === 1)).toBe(true);
    expect(successes.size).toBe(20);
    expect(new Set(rx.at(p).map((r) => r.body.data.id))).toEqual(new Set(ids));
    for (const d of list) expect(d.attempts).toBeLessThanOrEqual(6);
    await new Promise((r) => setTimeout(r, 1000));
    expect(rx.at(p).filter((r) => r.status === 200)).toHaveLength(20);
  });
});
