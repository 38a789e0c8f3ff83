import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type GatewayCopy,
  gatewayCopy,
  ingestClient,
  newWorkspace,
  request,
  type Workspace,
  waitFor,
} from "../helpers.js";
import { contact, member, pipeline } from "./crm-fixtures.js";
import { ahead, calendar } from "./scheduling-fixtures.js";

/**
 * Second copies of crm and scheduling beside the stack's, on the same databases and Redis, behind a gateway
 * copy of their own: each request below goes alternately through the stack's copies and these, at once.
 */
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

async function serviceCopy(
  name: "crm" | "scheduling" | "timeline" | "learning",
  env: Record<string, string> = {},
) {
  const port = await freePort();
  const child = spawn(process.execPath, [`services/${name}/dist/main.js`], {
    env: {
      ...process.env,
      FUNIL_ENV: inject("funilEnv"),
      NATS_URL: inject("natsUrl"),
      LOG_LEVEL: "info",
      [`${name.toUpperCase()}_PORT`]: String(port),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes(`${name} listening`)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the second ${name} copy exited (${code})`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

let copies: ChildProcess[] = [];
let gw: GatewayCopy;
let ws: Workspace;
beforeAll(async () => {
  const crm = await serviceCopy("crm");
  const scheduling = await serviceCopy("scheduling", { CRM_URL: crm.url });
  const timeline = await serviceCopy("timeline");
  const learning = await serviceCopy("learning");
  copies = [crm.child, scheduling.child, timeline.child, learning.child];
  gw = await gatewayCopy({
    CRM_URL: crm.url,
    SCHEDULING_URL: scheduling.url,
    TIMELINE_URL: timeline.url,
    LEARNING_URL: learning.url,
  });
  ws = await newWorkspace();
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  // Waited for: a copy still stopping would hold connections and consumers of the run's databases and
  // streams while the next test file runs.
  await Promise.all(
    copies.map((c) =>
      c.exitCode !== null || c.signalCode !== null
        ? undefined
        : new Promise((resolve) => {
            c.once("exit", resolve);
            c.kill("SIGTERM");
          }),
    ),
  );
}, 30_000);

/** The i-th request goes through the stack (even i) or through the copies (odd i). */
const call = (
  i: number,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) =>
  request(method, `${i % 2 ? gw.url : inject("gatewayUrl")}/api/v1${path}`, body, {
    authorization: `Bearer ${ws.key}`,
    ...headers,
  });

describe("running copies: the rules hold when the requests land on different copies", () => {
  it("docs/api/conventions.md §Idempotency-Key: ten identical requests with one Idempotency-Key over two crm copies create one deal", async () => {
    const [c, pl] = await Promise.all([contact(ws), pipeline(ws)]);
    const body = { title: "Copies", contactId: c.id, pipelineId: pl.id };
    const key = `copies-${Date.now()}`;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call(i, "POST", "/opportunities", body, { "idempotency-key": key }),
      ),
    );
    for (const r of results) expect([201, 409]).toContain(r.status);
    const created = results.filter((r) => r.status === 201);
    expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
    expect(created.filter((r) => r.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    const deals = await call(0, "GET", `/opportunities?contactId=${c.id}`);
    expect(deals.body.data).toHaveLength(1);
  });

  it("docs/api/meetings.md §POST /appointments: one time of one assignee booked at once over two scheduling copies: one 201, the rest 409 slot_taken", async () => {
    const who = (await member(ws)).id;
    const cal = await calendar(ws, { assigneeUserIds: [who] });
    const c = await contact(ws);
    const body = { calendarId: cal.id, contactId: c.id, startAt: ahead(6, "14:00"), assigneeUserId: who };
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call(i, "POST", "/appointments", body)),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe("slot_taken");
    }
  });

  it("docs/api/meetings.md §POST /appointments: a day's cap holds over two scheduling copies: 6 bookings at once on a cap of 2 give two 201", async () => {
    const who = (await member(ws)).id;
    const cal = await calendar(ws, { dailyCap: 2, assigneeUserIds: [who] });
    const c = await contact(ws);
    const times = ["09:00", "09:30", "10:00", "10:30", "11:00", "11:30"];
    const results = await Promise.all(
      times.map((t, i) =>
        call(i, "POST", "/appointments", {
          calendarId: cal.id,
          contactId: c.id,
          startAt: ahead(7, t),
          assigneeUserId: who,
        }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    for (const r of results.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe("daily_cap_reached");
    }
  });
});

describe("running copies: timeline ingest", () => {
  it("docs/api/interactions.md §Ingest: messages published twice, taken in batches by two timeline copies, are stored once; the touches are the earliest and latest", async () => {
    const ingest = await ingestClient();
    try {
      const phone = `+55 41 9${String(Date.now()).slice(-8)}`;
      const contactId = (await call(0, "POST", "/contacts", { name: "Ingest", phone })).body.id as string;
      const at = (i: number) => new Date(Date.UTC(2026, 0, 10, 10, i)).toISOString();
      const messages = Array.from({ length: 30 }, (_, i) => ({
        workspaceId: ws.id,
        rowId: `copies-${contactId}-${i}`,
        channel: "whatsapp",
        direction: "outbound",
        contactId,
        conversationId: `cv-${contactId}`,
        channelInstanceId: "inst-1",
        senderUserId: "u1",
        sentAt: at((i * 7) % 30),
        preview: "hi",
      }));
      // Each message twice, shuffled, all at once: the two copies share the durable consumer.
      const twice = [...messages, ...messages].sort(() => Math.random() - 0.5);
      await Promise.all(twice.map((m) => ingest.publish("ingest.inbox.message", m)));
      const list = await waitFor(async () => {
        const res = await call(1, "GET", `/interactions?contactId=${contactId}&limit=100`);
        return res.body.data.length >= 30 ? res.body.data : undefined;
      }, 20_000);
      await new Promise((r) => setTimeout(r, 500));
      const again = await call(0, "GET", `/interactions?contactId=${contactId}&limit=100`);
      expect(again.body.data).toHaveLength(30);
      expect(list).toHaveLength(30);
      const read = await call(1, "GET", `/contacts/${contactId}`);
      expect(read.body.firstHumanTouchAt).toBe(at(0));
      expect(read.body.lastHumanTouchAt).toBe(at(29));
    } finally {
      await ingest.close();
    }
  });
});

describe("running copies: the learning consumer", () => {
  it("docs/api/learners.md §Ingest: a platform's messages shuffled over two learning copies give each learner its latest login and ip", async () => {
    const operator = await newWorkspace({ operator: true, scopes: ["platform.read"] });
    const ingest = await ingestClient();
    try {
      const run = `copies${Date.now().toString(36)}`;
      const at = (h: number) => new Date(Date.UTC(2026, 10, 1, h)).toISOString();
      const users = Array.from({ length: 8 }, (_, i) => `${run}_${i}`);
      const messages = users.flatMap((userId) => [
        [
          "platform.user.upserted",
          { userId, name: `Aluno ${userId}`, email: `${userId}@x.io`, createdAt: at(0) },
        ],
        [
          "platform.enrollment.upserted",
          { userId, courseId: `${run}_c`, status: "active", progressPct: 10, startedAt: at(0) },
        ],
        ...[3, 9, 5, 1, 7].map((h) => ["platform.session.opened", { userId, at: at(h), ip: `192.0.2.${h}` }]),
      ]) as Array<[string, unknown]>;
      const shuffled = [...messages, ...messages].sort(() => Math.random() - 0.5);
      await Promise.all(shuffled.map(([subject, data]) => ingest.publish(subject, data)));
      for (const [i, userId] of users.entries()) {
        const via = i % 2 ? gw.url : inject("gatewayUrl");
        const read = await waitFor(async () => {
          const res = await request("GET", `${via}/api/v1/platform/users/${userId}?days=365`, undefined, {
            authorization: `Bearer ${operator.key}`,
          });
          return res.status === 200 && res.body.access?.lastIp === "192.0.2.9" ? res.body : undefined;
        }, 20_000);
        expect(read.access).toMatchObject({ lastLoginAt: at(9), lastIp: "192.0.2.9" });
      }
    } finally {
      await ingest.close();
    }
  });
});
