import { naming } from "@funil/config";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { startStack } from "../../scripts/stack.mjs";
import { request } from "../helpers.js";
import { dropDatabases, stackEnv } from "../private-stack.js";
import { readStream } from "./events.js";
import { type PrivateServer, privateServer } from "./servers.js";
import { type Answer, type Api, WORKLOADS } from "./workloads.js";

/**
 * docs/operations.md §Faults: processes are killed (SIGKILL) and dependencies restarted while clients write; nothing
 * accepted is lost or duplicated, no outage answers 500, and events catch up within 2 s of the
 * dependency coming back. A private stack on private NATS and Redis (the machine's are shared);
 * PostgreSQL is the machine's, with this run's own databases. CHAOS_SECONDS makes the run longer.
 */
const SECONDS = Number(process.env.CHAOS_SECONDS ?? 16);
const WRITERS = 4;
const ENV = `${process.env.FUNIL_TEST_ENV ?? "test"}_chaos`;
const names = naming(ENV);

let nats: PrivateServer;
let redis: PrivateServer;
// biome-ignore lint/suspicious/noExplicitAny: plain ESM script
let stack: any;

beforeAll(async () => {
  [nats, redis] = await Promise.all([privateServer("nats"), privateServer("redis")]);
  await dropDatabases(ENV);
  const env = stackEnv({
    FUNIL_ENV: ENV,
    NATS_URL: nats.url,
    REDIS_URL: redis.url,
    LOG_LEVEL: "warn",
    RATE_LIMIT_MAX: "1000000",
    UPSTREAM_TIMEOUT_MS: "3000",
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE_MS: "200,400,800,1600,3200",
  });
  stack = await startStack({
    env,
    port: 0,
    restart: true,
    stdio: process.env.CHAOS_LOG ?? "ignore",
    log: () => {},
  });
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await Promise.all([nats?.close(), redis?.close()]);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("chaos (docs/operations.md §Faults): SIGKILL of every process and restarts of NATS and Redis during writes", () => {
  it(
    "every accepted write is there once with one event, no outage answers 500, events catch up within 2 s",
    async () => {
      const base = stack.gatewayUrl;
      const adminCall = (method: string, path: string, body?: unknown) =>
        request(method, `${base}/admin/v1${path}`, body, { authorization: `Bearer ${stack.adminToken}` });
      // An operator workspace: the learning workload reads learners back (platform.read).
      const ws = await adminCall("POST", "/workspaces", { name: "Chaos", operator: true });
      const key = await adminCall("POST", `/workspaces/${ws.body.id}/keys`, {
        name: "chaos",
        scopes: [
          "contacts.read",
          "contacts.write",
          "opportunities.read",
          "opportunities.write",
          "calendars.read",
          "calendars.write",
          "interactions.read",
          "webhooks.manage",
          "platform.read",
        ],
      });
      const ingest = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
      const js = jetstream(ingest);
      const api: Api = {
        call: (method, path, body, headers = {}) =>
          request(method, `${base}/api/v1${path}`, body, {
            authorization: `Bearer ${key.body.secret}`,
            ...headers,
          }),
        admin: adminCall,
        publish: async (subject, payload) => {
          const deadline = Date.now() + 30_000;
          for (;;) {
            try {
              await js.publish(names.subject(subject), JSON.stringify(payload), { timeout: 1000 });
              return;
            } catch (err) {
              if (Date.now() > deadline) throw err;
              await sleep(100);
            }
          }
        },
      };
      const workloads = WORKLOADS.map((w) => w());
      for (const w of workloads) await w.setup(api, ws.body.id);

      // Every answer a client got, by status; a failed connection (the gateway killed) counts as "cut".
      const answers = new Map<string, number>();
      const count = (what: string) => answers.set(what, (answers.get(what) ?? 0) + 1);
      const send = async (method: string, path: string, body: unknown, headers?: Record<string, string>) => {
        const deadline = Date.now() + 30_000;
        for (;;) {
          const res: Answer | undefined = await api.call(method, path, body, headers).catch(() => undefined);
          count(res ? String(res.status) : "cut");
          const retry = !res || res.status === 503 || res.body?.error?.code === "idempotency_key_in_use";
          if (!retry || Date.now() > deadline)
            return res ?? { status: 0, headers: new Headers(), body: undefined };
          if (res?.status === 503) expect(res.headers.get("retry-after")).toBeTruthy();
          await sleep(100);
        }
      };

      let writing = true;
      let n = 0;
      const writers = Array.from({ length: WRITERS }, async () => {
        while (writing) {
          const i = n++;
          // Each workload numbers its own writes 0, 1, 2…, however many workloads share the writers.
          await workloads[i % workloads.length]!.write(send, Math.floor(i / workloads.length));
        }
      });

      // The faults, one after the other; `back` is when the thing is answering again.
      const faults: Array<{ what: string; at: number; back: number }> = [];
      const readyz = (): Promise<{ checks?: Record<string, { ok: boolean }> } | undefined> =>
        fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1000) })
          .then((r) => r.json() as Promise<{ checks?: Record<string, { ok: boolean }> }>)
          .catch(() => undefined);
      const until = async (ok: () => Promise<boolean>) => {
        while (!(await ok())) await sleep(50);
        return Date.now();
      };
      const killService = async (name: string) => {
        const at = Date.now();
        stack.kill(name);
        await sleep(300);
        const back = await until(async () => (await readyz())?.checks?.[name]?.ok === true);
        faults.push({ what: `kill ${name}`, at, back });
      };
      const killGateway = async () => {
        const at = Date.now();
        stack.kill("gateway");
        await sleep(300);
        faults.push({
          what: "kill gateway",
          at,
          back: await until(async () => (await readyz()) !== undefined),
        });
      };
      const restart = async (what: string, server: PrivateServer) => {
        const at = Date.now();
        await server.restart(1000);
        faults.push({ what: `restart ${what}`, at, back: Date.now() });
      };
      const schedule = [
        () => killService("crm"),
        () => killService("timeline"),
        () => killService("webhooks"),
        () => restart("NATS", nats),
        () => killGateway(),
        () => restart("Redis", redis),
        () => killService("scheduling"),
        () => killService("learning"),
      ];
      const started = Date.now();
      for (let i = 0; Date.now() - started < SECONDS * 1000; i++) {
        await sleep(1500);
        await schedule[i % schedule.length]!();
      }
      await sleep(1000);
      writing = false;
      await Promise.all(writers);
      await ingest.close();

      // Everything published: the outbox is empty.
      await until(async () => {
        const metrics = await fetch(`${base}/metrics`).then((r) => r.text());
        return ["crm", "scheduling"].every((service) =>
          new RegExp(`funil_outbox_backlog\\{service="${service}"\\} 0\\b`).test(metrics),
        );
      });
      const events = await readStream(nats.url, names.stream("EVENTS"));
      const timed = events.filter((e) => e.envelope.workspaceId === ws.body.id);

      const problems: string[] = [];
      const check = (ok: boolean, message: string) => {
        if (!ok) problems.push(message);
      };
      for (const w of workloads)
        await w.verify(
          api,
          timed.map((e) => e.envelope),
          check,
        );
      const ids = timed.map((e) => e.envelope.id);
      check(new Set(ids).size === ids.length, "no event is in the stream twice");

      // Lag: from when the event happened, or when the fault it happened in was over, to the stream.
      const lags = timed.map((e) => {
        const occurred = Date.parse(e.envelope.occurredAt);
        const fault = faults.find((f) => f.at - 500 <= occurred && occurred <= f.back);
        return e.storedAt - Math.max(occurred, fault?.back ?? occurred);
      });
      lags.sort((a, b) => a - b);
      const summary = {
        seconds: SECONDS,
        writes: n,
        answers: Object.fromEntries(answers),
        faults: faults.map((f) => `${f.what}: back after ${f.back - f.at} ms`),
        events: timed.length,
        lagMs: { p50: lags[Math.floor(lags.length / 2)], max: lags.at(-1) },
      };
      console.log(`chaos run: ${JSON.stringify(summary, null, 2)}`);
      expect(problems).toEqual([]);
      expect(answers.get("500") ?? 0).toBe(0);
      expect([...answers.keys()].every((s) => ["200", "201", "503", "409", "422", "cut"].includes(s))).toBe(
        true,
      );
      expect(lags.at(-1)).toBeLessThan(2000);
    },
    (SECONDS + 120) * 1000,
  );
});
