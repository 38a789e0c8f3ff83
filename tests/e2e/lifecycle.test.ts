import { spawn } from "node:child_process";
import { createServer as httpServer } from "node:http";
import { createServer } from "node:net";
import { connectBus, ensureStreams } from "@funil/bus";
import { naming } from "@funil/config";
import { jetstreamManager } from "@nats-io/jetstream";
import postgres from "postgres";
import { describe, expect, inject, it } from "vitest";
import { privateServer } from "../chaos/servers.js";
import { gatewayCopy, newWorkspace, request, waitFor } from "../helpers.js";
import { dropDatabases } from "../private-stack.js";

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

function run(script: string, env: Record<string, string>) {
  const child = spawn("node", [script], {
    env: { ...process.env, FUNIL_ENV: inject("funilEnv"), LOG_LEVEL: "info", ...env },
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, output: () => output };
}

async function started(p: ReturnType<typeof run>, line: string) {
  const deadline = Date.now() + 20_000;
  while (!p.output().includes(line) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(p.output()).toContain(line);
}

/** A crm process of its own on the test stack's database, and a gateway in this process calling only it. */
async function lonelyCrm(env: Record<string, string> = {}) {
  const port = await freePort();
  const crm = run("services/crm/dist/main.js", { CRM_PORT: String(port), ...env });
  await started(crm, "crm listening");
  const gw = await gatewayCopy({ CRM_URL: `http://127.0.0.1:${port}`, UPSTREAM_TIMEOUT_MS: "20000" });
  return { crm, gw };
}

/** Holds crm's contacts table against writes until release(): the upserts that reach it wait inside crm. */
async function holdContacts() {
  const db = postgres(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", {
    database: `funil_${inject("funilEnv")}_crm`,
    max: 1,
    onnotice: () => {},
  });
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    db.begin(async (tx) => {
      await tx`lock table contacts in share row exclusive mode`;
      resolve();
      await new Promise<void>((r) => {
        release = r;
      });
    }).catch(() => {});
  });
  await held;
  return async () => {
    release();
    await db.end({ timeout: 5 });
  };
}

const upserts = (gwUrl: string, key: string, n: number) =>
  Array.from({ length: n }, (_, i) =>
    request(
      "POST",
      `${gwUrl}/api/v1/contacts`,
      { name: `Stop ${i}`, phone: `+55 11 9${String(Date.now()).slice(-7)}${i}` },
      { authorization: `Bearer ${key}` },
    ),
  );

describe("processes (docs/operations.md §Configuration, §Stopping)", () => {
  it("a bad environment value stops the process with a message naming the variable", async () => {
    const p = run("services/crm/dist/main.js", { CRM_PORT: "not-a-port" });
    expect(await p.exited).toBe(1);
    expect(p.output()).toMatch(/CRM_PORT/);
    const q = run("services/crm/dist/main.js", { CRM_PORT: "0", SHUTDOWN_TIMEOUT_MS: "soon" });
    expect(await q.exited).toBe(1);
    expect(q.output()).toMatch(/SHUTDOWN_TIMEOUT_MS/);
  });

  it("SIGTERM stops a service cleanly (exit 0)", async () => {
    const port = await freePort();
    const p = run("services/crm/dist/main.js", { CRM_PORT: String(port) });
    await started(p, "crm listening");
    p.child.kill("SIGTERM");
    expect(await p.exited, p.output()).toBe(0);
  });
});

/** A gateway process of its own on the test stack's services, with `env` on top. */
async function lonelyGateway(env: Record<string, string>) {
  const [port, authPort] = [await freePort(), await freePort()];
  const gw = run("services/gateway/dist/main.js", {
    PORT: String(port),
    AUTH_PORT: String(authPort),
    HOST: "127.0.0.1",
    ADMIN_TOKEN: inject("adminToken"),
    ...Object.fromEntries(
      ["crm", "scheduling", "timeline", "webhooks", "learning"].map((n) => [
        `${n.toUpperCase()}_URL`,
        inject(`${n}Url` as "crmUrl"),
      ]),
    ),
    ...env,
  });
  return { ...gw, url: `http://127.0.0.1:${port}` };
}

describe("NATS away when the gateway starts (docs/operations.md §Faults)", () => {
  it("the gateway starts and serves; its events wait in its outbox and reach the stream once NATS is there", async () => {
    // A NATS of its own, down until the gateway is up.
    const nats = await privateServer("nats");
    await nats.kill();
    // A database and streams of its own: the stack's gateway would otherwise relay the shared outbox.
    const funilEnv = `${inject("funilEnv")}_latebus`;
    await dropDatabases(funilEnv);
    const gw = await lonelyGateway({ NATS_URL: nats.url, FUNIL_ENV: funilEnv });
    try {
      await started(gw, "gateway listening");
      expect(gw.output()).toContain("NATS unavailable at start");
      expect((await request("GET", `${gw.url}/readyz?scope=self`)).status).toBe(200);
      const admin = { authorization: `Bearer ${inject("adminToken")}` };
      const created = await request("POST", `${gw.url}/admin/v1/workspaces`, { name: "Late bus" }, admin);
      expect(created.status).toBe(201);
      const workspaceId = (created.body as { id: string }).id;

      // NATS arrives, with the streams the services would have made.
      await nats.start();
      const names = naming(funilEnv);
      const nc = await connectBus(nats.url, "test");
      try {
        await ensureStreams(nc, names, ["EVENTS"]);
        await started(gw, "NATS reached");
        const jsm = await jetstreamManager(nc);
        const event = await waitFor(async () => {
          const m = await jsm.streams
            .getMessage(names.stream("EVENTS"), { last_by_subj: names.subject("events.workspace.created") })
            .catch(() => undefined);
          return m?.json<{ data: { id: string } }>();
        });
        expect(event.data.id).toBe(workspaceId);
      } finally {
        await nc.close();
      }
      gw.child.kill("SIGTERM");
      expect(await gw.exited).toBe(0);
    } finally {
      gw.child.kill("SIGKILL");
      await nats.close();
      await dropDatabases(funilEnv);
    }
  });

  it("a gateway still waiting for NATS stops at once on SIGTERM, exit 0", async () => {
    const gw = await lonelyGateway({ NATS_URL: `nats://127.0.0.1:${await freePort()}` });
    try {
      await started(gw, "NATS unavailable at start");
      const signalledAt = Date.now();
      gw.child.kill("SIGTERM");
      expect(await gw.exited).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(8000);
    } finally {
      gw.child.kill("SIGKILL");
    }
  });
});

describe("graceful stop (SIGTERM: answer what was read, then exit within SHUTDOWN_TIMEOUT_MS)", () => {
  it("a service stopped with writes in flight answers every call it had read, then exits 0", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read", "contacts.write"] });
    const { crm, gw } = await lonelyCrm();
    const release = await holdContacts();
    try {
      const inFlight = Promise.all(upserts(gw.url, ws.key, 5));
      // The upserts are inside crm, waiting for the table, when SIGTERM arrives.
      await new Promise((r) => setTimeout(r, 700));
      const signalledAt = Date.now();
      crm.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 500));
      await release();
      expect((await inFlight).map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      expect(await crm.exited).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(20_000);
    } finally {
      await release();
      crm.child.kill("SIGKILL");
      await gw.stop();
    }
  });

  it("a service that cannot finish within SHUTDOWN_TIMEOUT_MS exits anyway, with a line saying so", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read", "contacts.write"] });
    const { crm, gw } = await lonelyCrm({ SHUTDOWN_TIMEOUT_MS: "1000" });
    const release = await holdContacts();
    try {
      const inFlight = Promise.allSettled(upserts(gw.url, ws.key, 2));
      await new Promise((r) => setTimeout(r, 700));
      const signalledAt = Date.now();
      crm.child.kill("SIGTERM");
      expect(await crm.exited).toBe(1);
      expect(Date.now() - signalledAt).toBeLessThan(3000);
      expect(crm.output()).toContain("did not stop within SHUTDOWN_TIMEOUT_MS");
      await release();
      await inFlight;
    } finally {
      await release();
      crm.child.kill("SIGKILL");
      await gw.stop();
    }
  });

  it("a gateway stopped with requests in flight answers each of them, then exits 0", async () => {
    const ws = await newWorkspace({ scopes: ["contacts.read", "contacts.write"] });
    const release = await holdContacts();
    const gw = await lonelyGateway({});
    try {
      await started(gw, "gateway listening");
      const { url } = gw;
      expect((await request("GET", `${url}/readyz`)).status).toBe(200);
      const inFlight = Promise.all(upserts(url, ws.key, 5));
      await new Promise((r) => setTimeout(r, 700));
      const signalledAt = Date.now();
      gw.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
      await release();
      expect((await inFlight).map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      expect(await gw.exited).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(20_000);
    } finally {
      await release();
      gw.child.kill("SIGKILL");
    }
  });

  it("a webhooks copy stopped while its POSTs are in flight finishes or hands them back: each delivery is POSTed once", async () => {
    // A receiver that answers 200 after 700 ms, well inside the attempt timeout: every attempt succeeds.
    const seen: string[] = [];
    let inFlight = 0;
    const rx = httpServer((req, res) => {
      req.resume();
      inFlight++;
      seen.push(String(req.headers["x-funil-delivery"]));
      setTimeout(() => {
        inFlight--;
        res.writeHead(200).end("ok");
      }, 700);
    });
    await new Promise<void>((r) => rx.listen(0, "127.0.0.1", r));
    const rxUrl = `http://127.0.0.1:${(rx.address() as { port: number }).port}/stop`;
    const copyEnv = {
      NATS_URL: inject("natsUrl"),
      AUTH_URL: inject("authUrl"),
      WEBHOOKS_PORT: "0",
      WEBHOOK_ALLOW_HTTP: "true",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      WEBHOOK_RETRY_SCHEDULE_MS: "200,400,600,800,1000",
      WEBHOOK_TIMEOUT_MS: "1500",
    };
    let copy = run("services/webhooks/dist/main.js", copyEnv);
    try {
      await started(copy, "webhooks listening");
      const ws = await newWorkspace();
      const sub = await ws.call("POST", "/webhooks", { url: rxUrl, events: ["contact.created"] });
      expect(sub.status).toBe(201);
      for (let i = 0; i < 20; i++)
        await ws.call("POST", "/contacts", { name: `Hook ${i}`, phone: `+55 21 9${Date.now() % 1e6}${i}` });
      await waitFor(async () => (inFlight > 0 ? true : undefined));
      copy.child.kill("SIGTERM");
      expect(await copy.exited).toBe(0);
      copy = run("services/webhooks/dist/main.js", copyEnv);
      await started(copy, "webhooks listening");
      const list = await waitFor(async () => {
        const res = await ws.call("GET", `/webhooks/${sub.body.subscription.id}/deliveries`);
        return res.body.data.length === 20 &&
          res.body.data.every((d: { status: string }) => d.status === "delivered")
          ? res.body.data
          : undefined;
      }, 30_000);
      expect(list.every((d: { attempts: number }) => d.attempts === 1)).toBe(true);
      expect(seen).toHaveLength(20);
      expect(new Set(seen).size).toBe(20);
    } finally {
      copy.child.kill("SIGKILL");
      rx.closeAllConnections();
      rx.close();
    }
  });
});
