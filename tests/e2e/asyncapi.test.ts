import { readFile } from "node:fs/promises";
import { naming } from "@funil/config";
import { DeliverPolicy, type JsMsg, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection, nanos } from "@nats-io/transport-node";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { gatewayUrl, newWorkspace, request, type Workspace, waitFor } from "../helpers.js";
import { type Receiver, startReceiver } from "../receiver.js";
import { contact, deal, member, pipeline } from "./crm-fixtures.js";
import { ahead, book, calendar } from "./scheduling-fixtures.js";

/**
 * A NATS client that reads the stack's streams with the AsyncAPI document in hand (docs/api/events.md
 * §AsyncAPI document): for every channel, a real message (made through the gateway, or published as
 * the other systems do) is validated against the document's payload and headers schemas, and the
 * streams and consumers NATS has are the ones x-jetstream describes.
 */

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON
type Json = any;

interface Seen {
  /** The subject without the FUNIL_ENV prefix. */
  subject: string;
  headers: Record<string, string>;
  body: Json;
  raw: string;
}

const names = naming(inject("funilEnv"));
const prefix = names.subject("");
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
/** The mark of the messages sent to be refused (their dead letters carry them as text). */
const refused = `refused-${run}`;
let doc: Json;
let nc: NatsConnection;
let ws: Workspace;
let rx: Receiver;
const seen: Seen[] = [];
const stops: Array<() => void> = [];

/** Every message of `stream` from now on, as it arrives, through an ordered consumer. */
async function collect(stream: string) {
  const consumer = await jetstream(nc).consumers.get(names.stream(stream), {
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: new Date(Date.now() - 1000).toISOString(),
  });
  const messages = await consumer.consume();
  stops.push(() => messages.stop());
  (async () => {
    for await (const m of messages) seen.push(seenOf(m));
  })().catch(() => {});
}

function seenOf(m: JsMsg): Seen {
  const headers: Record<string, string> = {};
  for (const k of m.headers?.keys() ?? []) headers[k] = m.headers!.get(k);
  const raw = m.string();
  let body: Json;
  try {
    body = JSON.parse(raw);
  } catch {}
  return { subject: m.subject.slice(prefix.length), headers, body, raw };
}

/** The channel whose address the subject matches (`{param}`: one or more tokens). */
function channelOf(subject: string): string | undefined {
  for (const [id, channel] of Object.entries<Json>(doc.channels)) {
    const pattern = channel.address
      .split(/(\{[^}]+\})/)
      .map((part: string) => (/^\{.+\}$/.test(part) ? ".+" : part.replace(/[.*+?^$()|[\]\\]/g, "\\$&")))
      .join("");
    if (new RegExp(`^${pattern}$`).test(subject)) return id;
  }
  return undefined;
}

beforeAll(async () => {
  const res = await request("GET", `${gatewayUrl()}/api/v1/asyncapi.json`);
  expect(res.status).toBe(200);
  doc = res.body;
  nc = await connect({ servers: inject("natsUrl") });
  for (const stream of Object.keys(doc["x-jetstream"].streams)) await collect(stream);
  [ws, rx] = await Promise.all([newWorkspace(), startReceiver()]);
});

afterAll(async () => {
  for (const stop of stops) stop();
  await nc?.close();
  await rx?.close();
});

/** Every change docs/api/events.md lists, made through the gateway, in one workspace. */
async function everyEvent() {
  const sub = await ws.call("POST", "/webhooks", {
    url: rx.url(`/asyncapi-${run}`),
    events: ["contact.created"],
  });
  expect(sub.status, JSON.stringify(sub.body)).toBe(201);
  const c = await contact(ws);
  expect((await ws.call("PATCH", `/contacts/${c.id}`, { name: `Renamed ${run}` })).status).toBe(200);
  const pl = await pipeline(ws);
  const won = await deal(ws, { contactId: c.id, pipelineId: pl.id });
  expect((await ws.call("PATCH", `/opportunities/${won.id}`, { stageId: pl.stages[1]!.id })).status).toBe(
    200,
  );
  expect((await ws.call("PATCH", `/opportunities/${won.id}`, { status: "won" })).status).toBe(200);
  const lost = await deal(ws, { contactId: c.id, pipelineId: pl.id });
  expect(
    (await ws.call("PATCH", `/opportunities/${lost.id}`, { status: "lost", lossReason: "price" })).status,
  ).toBe(200);
  expect((await ws.call("DELETE", `/opportunities/${lost.id}`)).status).toBe(204);
  expect((await ws.call("POST", `/opportunities/${lost.id}/restore`)).status).toBe(200);
  const task = await ws.call("POST", "/tasks", { title: `Call ${run}`, opportunityId: won.id });
  expect(task.status, JSON.stringify(task.body)).toBe(201);
  expect((await ws.call("PATCH", `/tasks/${task.body.id}`, { completed: true })).status).toBe(200);
  const author = await member(ws);
  const note = await ws.call("POST", "/notes", { contactId: c.id, body: `Note ${run}`, userId: author.id });
  expect(note.status, JSON.stringify(note.body)).toBe(201);
  const cal = await calendar(ws);
  const [assigneeUserId] = cal.assigneeUserIds;
  const m = await book(ws, {
    calendarId: cal.id,
    contactId: c.id,
    startAt: ahead(5, "09:00"),
    assigneeUserId,
  });
  expect(m.status, JSON.stringify(m.body)).toBe(201);
  const moved = await ws.call("POST", `/appointments/${m.body.id}/reschedule`, {
    startAt: ahead(5, "11:00"),
  });
  expect(moved.status, JSON.stringify(moved.body)).toBe(200);
  expect((await ws.call("POST", `/appointments/${m.body.id}/outcome`, { outcome: "realizada" })).status).toBe(
    200,
  );
  const other = await book(ws, {
    calendarId: cal.id,
    contactId: c.id,
    startAt: ahead(6, "09:00"),
    assigneeUserId,
  });
  expect((await ws.call("POST", `/appointments/${other.body.id}/cancel`, {})).status).toBe(200);
  const erased = await contact(ws);
  expect((await ws.call("POST", `/contacts/${erased.id}/erase`)).status).toBe(200);
  await adminChanges(author.id);
  // A delivery of the subscription sent again: webhook.resent.
  const id = sub.body.subscription.id as string;
  const delivered = await waitFor(async () => {
    const list = (await ws.call("GET", `/webhooks/${id}/deliveries`)).body.data as Json[];
    return list.find((d) => d.status === "delivered");
  }, 20_000);
  expect((await ws.call("POST", `/webhooks/${id}/deliveries/${delivered.id}/resend`)).status).toBe(202);
  return id;
}

/** The internal events of the admin API's changes (the gateway's own included) and of a subscription's life (docs/api/events.md §Every event type). */
async function adminChanges(memberId: string) {
  const field = await ws.admin("POST", `/workspaces/${ws.id}/custom-fields`, {
    entity: "contact",
    fieldKey: `f${run}`.replace(/[^a-z0-9_]/gi, "_").toLowerCase(),
    label: "Field",
    type: "text",
  });
  expect(field.status, JSON.stringify(field.body)).toBe(201);
  expect(
    (await ws.admin("PATCH", `/workspaces/${ws.id}/members/${memberId}`, { role: "gerente" })).status,
  ).toBe(200);
  const spare = await ws.call("POST", "/webhooks", {
    url: rx.url(`/spare-${run}`),
    events: ["contact.created"],
  });
  expect(spare.status).toBe(201);
  const id = spare.body.subscription.id;
  expect((await ws.call("PATCH", `/webhooks/${id}`, { description: "spare" })).status).toBe(200);
  expect((await ws.call("POST", `/webhooks/${id}/rotate-secret`)).status).toBe(200);
  expect((await ws.call("DELETE", `/webhooks/${id}`)).status).toBe(204);
  // The gateway's own: the workspace renamed, a key created, rescoped and revoked.
  expect((await ws.admin("PATCH", `/workspaces/${ws.id}`, { name: `Renamed ${run}` })).status).toBe(200);
  const key = await ws.admin("POST", `/workspaces/${ws.id}/keys`, { name: "spare", scopes: [] });
  expect(key.status).toBe(201);
  expect((await ws.admin("PATCH", `/keys/${key.body.key.id}`, { scopes: ["contacts.read"] })).status).toBe(
    200,
  );
  expect((await ws.admin("DELETE", `/keys/${key.body.key.id}`)).status).toBe(204);
}

/** Every ingest and platform subject, as the other systems publish them, and one refused message of each stream. */
async function everyMessage() {
  const js = jetstream(nc);
  const send = (subject: string, body: unknown, id?: string) =>
    js.publish(names.subject(subject), typeof body === "string" ? body : JSON.stringify(body), {
      ...(id ? { msgID: id } : {}),
    });
  const at = new Date().toISOString();
  const base = { workspaceId: ws.id, contactId: `ct_${run}`, direction: "outbound" };
  await send("ingest.inbox.message", {
    ...base,
    rowId: `m-${run}`,
    channel: "whatsapp",
    conversationId: `cv_${run}`,
    conversationAssigneeUserId: "usr_a",
    sentAt: at,
    senderUserId: "usr_a",
    preview: "hello",
  });
  await send("ingest.inbox.conversation_assigned", {
    workspaceId: ws.id,
    conversationId: `cv_${run}`,
    assigneeUserId: "usr_b",
    at,
  });
  await send(
    "ingest.call",
    { ...base, rowId: 7, startedAt: at, durationSec: 60, status: "answered" },
    `call-${run}`,
  );
  await send("ingest.email", { ...base, rowId: `e-${run}`, kind: "panel_reply", sentAt: at, preview: "re" });
  await send("ingest.call", `{"not json ${refused}`);
  const user = `u_${run}`;
  const platform: Record<string, unknown> = {
    "platform.user.upserted": { userId: user, name: "Ana", email: "ana@example.com", createdAt: at },
    "platform.course.upserted": {
      courseId: `c_${run}`,
      title: "SQL",
      lessons: [{ lessonId: `l_${run}`, title: "1" }],
    },
    "platform.enrollment.upserted": {
      userId: user,
      courseId: `c_${run}`,
      status: "active",
      progressPct: 10,
      startedAt: at,
      completedAt: null,
    },
    "platform.session.opened": { userId: user, at, ip: "203.0.113.9", sessionId: `s_${run}` },
    "platform.session.seen": { userId: user, at },
    "platform.lesson.progress": {
      userId: user,
      lessonId: `l_${run}`,
      courseId: `c_${run}`,
      watchSec: 30,
      watchPct: 50,
      completed: false,
      at,
    },
    "platform.certificate.issued": { userId: user, code: `cert_${run}`, courseId: `c_${run}`, issuedAt: at },
    "platform.library.doc.upserted": { docId: `d_${run}`, title: "Guide" },
    "platform.library.read": { userId: user, docId: `d_${run}`, readSec: 12, read: true, at },
  };
  for (const [subject, data] of Object.entries(platform)) await send(subject, data, `${subject}-${run}`);
  await send("platform.session.seen", { userId: user, at: "yesterday", tag: refused }, refused);
}

const DEAD_LETTERS = new Set(["ingest.dead", "platform.deadletter"]);

/** Whether a message belongs to this run: its workspace, or the run's marker in it. */
const ours = (s: Seen, jobs: string) =>
  s.body?.workspaceId === ws.id || s.raw.includes(run) || s.subject === `webhook.deliveries.${jobs}`;

describe("a NATS client reads every subject with the AsyncAPI document (docs/api/events.md §AsyncAPI document)", () => {
  it("docs/api/events.md §AsyncAPI document: GET /api/v1/asyncapi.json needs no key and is docs/asyncapi.json", async () => {
    const committed = JSON.parse(
      await readFile(new URL("../../docs/asyncapi.json", import.meta.url), "utf8"),
    );
    expect(doc).toEqual(committed);
    const res = await request("GET", `${gatewayUrl()}/api/v1/asyncapi.json`, undefined, {
      authorization: "Bearer fnl_not_a_key",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("docs/api/events.md §AsyncAPI document: every channel carries real messages that match its payload and headers schemas", async () => {
    const subscription = await everyEvent();
    await everyMessage();
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema(doc, "asyncapi");
    const check = (id: string, part: "payload" | "headers") =>
      ajv.getSchema(`asyncapi#/components/messages/${id.replace(/\//g, "~1")}/${part}`)!;
    const channels = Object.keys(doc.channels);
    const validated = new Set<string>();
    const problems: string[] = [];
    const missing = () => channels.filter((c) => !validated.has(c));
    // Until every channel has had a message of this run: the events' relays, the fan-out and the dead
    // letters come a moment after the calls that cause them.
    await waitFor(async () => {
      for (const s of seen.splice(0).filter((x) => ours(x, subscription))) {
        const id = channelOf(s.subject);
        if (!id) {
          problems.push(`${s.subject}: no channel in the document`);
          continue;
        }
        const payload = check(id, "payload");
        const headers = check(id, "headers");
        if (s.raw.includes(refused) && !DEAD_LETTERS.has(id)) {
          // What the consumer refused, the document refuses too.
          if (payload(s.body)) problems.push(`${s.subject}: the document takes a refused message: ${s.raw}`);
          continue;
        }
        if (!payload(s.body)) problems.push(`${s.subject}: ${ajv.errorsText(payload.errors)}: ${s.raw}`);
        if (!headers(s.headers)) problems.push(`${s.subject} headers: ${ajv.errorsText(headers.errors)}`);
        validated.add(id);
        if (s.subject === "events.contact.created" && s.headers["Nats-Msg-Id"] !== s.body.id)
          problems.push("an event's Nats-Msg-Id is not its id");
      }
      return problems.length > 0 || missing().length === 0 || undefined;
    }, 20_000).catch(() => {});
    expect(problems).toEqual([]);
    expect(missing(), "channels without a message of this run").toEqual([]);
  });

  it("docs/operations.md §Retention: the streams and durable consumers NATS has are the ones x-jetstream describes", async () => {
    const jsm = await jetstreamManager(nc);
    for (const [name, s] of Object.entries<Json>(doc["x-jetstream"].streams)) {
      const { config } = await jsm.streams.info(names.stream(name));
      expect(config.subjects, name).toEqual(s.subjects.map((x: string) => names.subject(x)));
      expect(config.storage, name).toBe(s.storage);
      expect(config.max_age, name).toBe(nanos(s.max_age_ms));
      expect(config.duplicate_window, name).toBe(nanos(s.duplicate_window_ms));
    }
    for (const [durable, c] of Object.entries<Json>(doc["x-jetstream"].consumers)) {
      const { config } = await jsm.consumers.info(names.stream(c.stream), durable);
      expect(config.durable_name).toBe(durable);
      expect(config.filter_subject, durable).toBe(names.subject(c.filter_subject));
      expect(config.ack_policy, durable).toBe(c.ack_policy);
      expect(config.max_deliver, durable).toBe(c.max_deliver);
      if (c.max_ack_pending !== undefined) expect(config.max_ack_pending, durable).toBe(c.max_ack_pending);
      // The sender's ack wait follows WEBHOOK_TIMEOUT_MS, which the test stack shortens (tests/setup/stack.ts).
      if (durable !== "webhooks-sender") expect(config.ack_wait, durable).toBe(nanos(c.ack_wait_ms));
    }
  });
});
