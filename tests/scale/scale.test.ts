import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { naming } from "@funil/config";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { SERVICES, startStack } from "../../scripts/stack.mjs";
import { readStream } from "../chaos/events.js";
import { type PrivateServer, privateServer } from "../chaos/servers.js";
import { type Answer, type Api, type Send, WORKLOADS } from "../chaos/workloads.js";
import { request } from "../helpers.js";
import { dropDatabases, stackEnv } from "../private-stack.js";

/**
 * Scale-out (docs/operations.md "Running copies"): 3 copies of crm, 2 of every other service and 2
 * gateways, on private NATS and Redis, under a mixed workload of writes and reads of every service.
 * Checked from the outside: each crm copy's share of crm's calls, a rolling restart of every copy with
 * no failed answer, a SIGKILL of one crm copy with no failed read, a copy added mid-run getting calls
 * within 5 s, and afterwards every accepted write present once with one event and one delivery.
 */
const ENV = `${process.env.FUNIL_TEST_ENV ?? "test"}_scale`;
const names = naming(ENV);
const COPIES = { crm: 3, scheduling: 2, timeline: 2, learning: 2, webhooks: 2, gateway: 2 };
const WRITERS = 3;
const READERS = 3;

/** The processes' log lines (warn and above): a failed answer is shown with what the processes said of it. */
const LOG = process.env.SCALE_LOG ?? join(tmpdir(), `funil-scale-${process.pid}.log`);

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
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE_MS: "200,400,800,1600,3200",
    // Short enough that the copy added mid-run is found within the 5 s the test allows.
    RPC_RESOLVE_MS: "1000",
    RPC_MAX_CONNECTION_AGE_MS: "4000",
    SHUTDOWN_TIMEOUT_MS: "10000",
    // The balancer below polls /readyz every 100 ms: a stopping gateway stays up that long after.
    SHUTDOWN_DELAY_MS: "500",
    DATABASE_POOL_MAX: "2",
  });
  stack = await startStack({
    env,
    port: 0,
    copies: COPIES,
    spareCopies: { crm: 1 },
    stdio: LOG,
    log: () => {},
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await Promise.all([nats?.close(), redis?.close()]);
  if (!process.env.SCALE_LOG) rmSync(LOG, { force: true });
});

/** What the processes logged about unavailable dependencies and errors, for a run with failed answers. */
const loggedTrouble = () =>
  existsSync(LOG)
    ? readFileSync(LOG, "utf8")
        .split("\n")
        .filter((line) => /unavailable|"level":50/.test(line))
        .slice(-30)
    : [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What a load balancer in front of the gateway copies does: it sends to the copies whose /readyz
 * answers 200 (checked every 100 ms), and sends a request that could not connect to another copy (it
 * was never received). Any other failure is the client's to see.
 */
function balancer(urls: string[]) {
  const ready = new Map(urls.map((u) => [u, true]));
  let next = 0;
  let running = true;
  const poll = (async () => {
    while (running) {
      await Promise.all(
        urls.map(async (u) => {
          const ok = await fetch(`${u}/readyz`, { signal: AbortSignal.timeout(500) })
            .then((r) => r.status === 200)
            .catch(() => false);
          ready.set(u, ok);
        }),
      );
      await sleep(100);
    }
  })();
  const pick = () => {
    const live = urls.filter((u) => ready.get(u));
    const from = live.length > 0 ? live : urls;
    return from[next++ % from.length]!;
  };
  return {
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      for (let attempt = 0; ; attempt++) {
        const base = pick();
        try {
          return await request(method, `${base}${path}`, body, headers);
        } catch (err) {
          const refused = (err as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED";
          if (!refused || attempt >= 20) throw err;
          ready.set(base, false);
          await sleep(25);
        }
      }
    },
    async stop() {
      running = false;
      await poll;
    },
  };
}

/** crm calls per crm address, summed over the gateway copies' /metrics. */
async function crmCalls(gateways: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const g of gateways) {
    const text = await fetch(`${g}/metrics`).then((r) => r.text());
    for (const m of text.matchAll(/^funil_rpc_client_address_calls_total\{([^}]*)\} (\d+)/gm)) {
      const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
      if (labels.service !== "crm") continue;
      out.set(labels.address!, (out.get(labels.address!) ?? 0) + Number(m[2]));
    }
  }
  return out;
}

const delta = (after: Map<string, number>, before: Map<string, number>) =>
  new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));

describe("scale-out: several copies of every service, rolled and killed under load", () => {
  it("balances, rolls every copy with no failed answer, survives a SIGKILL, and loses or doubles nothing", async () => {
    const gateways: string[] = stack.gatewayUrls;
    expect(gateways).toHaveLength(2);
    const lb = balancer(gateways);
    const adminCall = (method: string, path: string, body?: unknown) =>
      lb.call(method, `/admin/v1${path}`, body, { authorization: `Bearer ${stack.adminToken}` });
    const ws = await adminCall("POST", "/workspaces", { name: "Scale", operator: true });
    const key = await adminCall("POST", `/workspaces/${ws.body.id}/keys`, {
      name: "scale",
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
        "members.read",
      ],
    });
    const auth = { authorization: `Bearer ${key.body.secret}` };
    const ingest = await connect({ servers: nats.url });
    const js = jetstream(ingest);
    const api: Api = {
      call: (method, path, body, headers = {}) =>
        lb.call(method, `/api/v1${path}`, body, { ...auth, ...headers }),
      admin: adminCall,
      publish: async (subject, payload) => {
        await js.publish(names.subject(subject), JSON.stringify(payload), { timeout: 5000 });
      },
    };
    const workloads = WORKLOADS.map((w) => w());
    for (const w of workloads) await w.setup(api, ws.body.id);

    // Answers by phase and status; the phase decides what is allowed.
    let phase = "balance";
    const answers = new Map<string, Map<string, number>>();
    const failures: string[] = [];
    const failed = (what: string) => (err: unknown) => {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      failures.push(`${phase} ${what}: ${String(err)} ${cause?.code ?? ""} ${cause?.message ?? ""}`);
      return undefined;
    };
    const count = (kind: string, status: string) => {
      const key = `${phase} ${kind}`;
      const m = answers.get(key) ?? new Map<string, number>();
      m.set(status, (m.get(status) ?? 0) + 1);
      answers.set(key, m);
    };
    // The workloads' own expected refusals: a booking that collides (409 slot_taken) or is over the
    // day's cap (422 daily_cap_reached).
    const expected = (res: Answer) =>
      ["slot_taken", "daily_cap_reached"].includes(res.body?.error?.code ?? "");
    const send: Send = async (method, path, body, headers) => {
      for (;;) {
        const res = await api.call(method, path, body, headers).catch(failed(`${method} ${path}`));
        count("write", res ? (expected(res) ? "expected" : String(res.status)) : "failed");
        if (res && res.status >= 300 && !expected(res))
          failures.push(
            `${phase} ${method} ${path}: ${res.status} ${res.body?.error?.code} ${res.body?.error?.message}`,
          );
        // A careful client retries what did not get an answer with the same key or upsert.
        if (res && res.status !== 503) return res;
        await sleep(100);
      }
    };

    let running = true;
    let n = 0;
    const writers = Array.from({ length: WRITERS }, async () => {
      while (running) {
        const i = n++;
        await workloads[i % workloads.length]!.write(send, Math.floor(i / workloads.length));
      }
    });
    const contactIds: string[] = [];
    const reads = [
      () => "/contacts?limit=20",
      () => (contactIds.length ? `/contacts/${contactIds[contactIds.length - 1]}` : "/contacts?limit=1"),
      () => "/opportunities?limit=20",
      () => "/interactions?limit=20",
      () => "/appointments?limit=20",
      () => "/calendars",
      () => "/platform/users?limit=20",
      () => "/webhooks",
      () => "/members",
    ];
    const readers = Array.from({ length: READERS }, async (_, r) => {
      for (let i = r; running; i++) {
        const path = reads[i % reads.length]!();
        const res = await api.call("GET", path).catch(failed(`GET ${path}`));
        count("read", res ? String(res.status) : "failed");
        if (res && res.status !== 200)
          failures.push(`${phase} GET ${path}: ${res.status} ${res.body?.error?.code}`);
        if (res?.status === 200 && path.startsWith("/contacts?") && res.body.data[0])
          contactIds.push(res.body.data[0].id);
      }
    });

    // 1. Balance: every crm copy serves at least 20 % of crm's calls.
    const before = await crmCalls(gateways);
    await sleep(4000);
    const shares = delta(await crmCalls(gateways), before);
    const total = [...shares.values()].reduce((a, b) => a + b, 0);
    const crmAddresses = stack.copies("crm").filter((c: { running: boolean }) => c.running);
    expect(crmAddresses).toHaveLength(3);
    for (const c of crmAddresses) {
      const served = [...shares].find(([address]) => address.includes(`:${c.port}`))?.[1] ?? 0;
      expect(
        served / total,
        `crm copy ${c.index} (port ${c.port}) served ${served} of ${total}`,
      ).toBeGreaterThanOrEqual(0.2);
    }

    // 2. A rolling restart of every copy of every service, then of each gateway, one at a time.
    phase = "rolling";
    for (const name of [...SERVICES, "gateway"]) {
      for (const copy of stack.copies(name).filter((c: { running: boolean }) => c.running)) {
        const exit = await stack.stopCopy(name, copy.index, "SIGTERM");
        expect(exit.code, `${name} ${copy.index} exits cleanly`).toBe(0);
        await stack.startCopy(name, copy.index);
      }
    }

    // 3. A copy added in the middle of the run receives calls within 5 s.
    phase = "added";
    const spare = stack.copies("crm").find((c: { running: boolean }) => !c.running);
    await stack.startCopy("crm", spare.index);
    const added = Date.now();
    const atStart = await crmCalls(gateways);
    let reached: number | undefined;
    while (Date.now() - added < 8000) {
      const calls = delta(await crmCalls(gateways), atStart);
      if ([...calls].some(([address, c]) => address.includes(`:${spare.port}`) && c > 0)) {
        reached = Date.now() - added;
        break;
      }
      await sleep(100);
    }
    expect(reached, "the added crm copy got calls").toBeDefined();
    expect(reached!).toBeLessThan(5000);

    // 4. SIGKILL of one crm copy: no read fails; a write is a 2xx or a 503.
    phase = "sigkill";
    stack.kill("crm", "SIGKILL", 0);
    await sleep(3000);

    running = false;
    await Promise.all([...writers, ...readers]);
    await ingest.close();

    const summary = Object.fromEntries([...answers].map(([k, m]) => [k, Object.fromEntries(m)]));
    console.log(
      `scale run: ${JSON.stringify({ writes: n, answers: summary, failures: [...new Set(failures)].slice(0, 20) }, null, 2)}`,
    );
    if (failures.length > 0) console.log(`what the processes logged:\n${loggedTrouble().join("\n")}`);
    const only = (key: string, allowed: string[]) => {
      const m = answers.get(key) ?? new Map();
      const bad = [...m.keys()].filter((s) => !allowed.includes(s));
      expect(bad, `${key}: ${JSON.stringify(Object.fromEntries(m))}`).toEqual([]);
    };
    for (const p of ["balance", "rolling", "added"]) {
      only(`${p} read`, ["200"]);
      only(`${p} write`, ["200", "201", "expected"]);
    }
    only("sigkill read", ["200"]);
    only("sigkill write", ["200", "201", "expected", "503"]);

    // 5. Nothing lost or doubled: every accepted write once, one event each, one delivery each.
    const events = await readStream(nats.url, names.stream("EVENTS"));
    const problems: string[] = [];
    const check = (ok: boolean, message: string) => {
      if (!ok) problems.push(message);
    };
    const mine = events.filter((e) => e.envelope.workspaceId === ws.body.id).map((e) => e.envelope);
    for (const w of workloads) await w.verify(api, mine, check);
    const ids = mine.map((e) => e.id);
    check(new Set(ids).size === ids.length, "no event is in the stream twice");
    expect(problems).toEqual([]);
    await lb.stop();
  }, 240_000);
});
