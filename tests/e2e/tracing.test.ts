import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { naming } from "@funil/config";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { connect, headers } from "@nats-io/transport-node";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { startStack } from "../../scripts/stack.mjs";
import { request, waitFor } from "../helpers.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../otlp-receiver.js";
import { dropDatabases, stackEnv } from "../private-stack.js";
import { startReceiver } from "../receiver.js";

/**
 * A stack of its own whose every process sends its spans to an OTLP/HTTP receiver in this process: what
 * an operator's collector would get for a request, from the gateway through the RPC calls it makes.
 */
const ENV = `${process.env.FUNIL_TEST_ENV ?? "test"}_otel`;
const names = naming(ENV);
const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const INTERNAL_KIND = 1;
const SERVER_KIND = 2;
const CLIENT_KIND = 3;
const PRODUCER_KIND = 4;
const CONSUMER_KIND = 5;
const ERROR = 2;
const ROUTE = "GET /api/v1/contacts/:id";

// biome-ignore lint/suspicious/noExplicitAny: plain ESM script
let stack: any;
let receiver: OtlpReceiver;
let webhooks: Awaited<ReturnType<typeof startReceiver>>;
/** Every line the stack's processes write, as `name | line`. */
const LOG_FILE = join(tmpdir(), `funil-tracing-${process.pid}.log`);
let workspaceId = "";
let contactId = "";
let pipelineId = "";
let call: (path: string, headers?: Record<string, string>) => ReturnType<typeof request>;
let auth: Record<string, string> = {};
/** A call to the stack's admin API. */
const admin = (method: string, path: string, body?: unknown) =>
  request(method, `${stack.gatewayUrl}/admin/v1${path}`, body, {
    authorization: `Bearer ${stack.adminToken}`,
  });

beforeAll(async () => {
  await dropDatabases(ENV, SERVER);
  receiver = await startOtlpReceiver();
  webhooks = await startReceiver();
  const env = stackEnv({
    FUNIL_ENV: ENV,
    LOG_LEVEL: "info",
    RATE_LIMIT_MAX: "100000",
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE_MS: "200,400,600",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    // Every trace a request starts is kept; a caller's decision (sampled or not) is followed.
    OTEL_TRACES_SAMPLER: "parentbased_always_on",
    OTEL_BSP_SCHEDULE_DELAY: "100",
  });
  stack = await startStack({ env, port: 0, stdio: LOG_FILE, log: () => {} });
  const ws = await admin("POST", "/workspaces", { name: "Tracing" });
  const key = await admin("POST", `/workspaces/${ws.body.id}/keys`, {
    name: "tracing",
    scopes: [
      "contacts.read",
      "contacts.write",
      "opportunities.read",
      "opportunities.write",
      "webhooks.manage",
    ],
  });
  workspaceId = ws.body.id;
  const pipeline = await admin("POST", `/workspaces/${workspaceId}/pipelines`, {
    name: "Traced",
    stages: [{ name: "Novo" }],
  });
  expect(pipeline.status).toBe(201);
  pipelineId = pipeline.body.id;
  auth = { authorization: `Bearer ${key.body.secret}` };
  const created = await request(
    "POST",
    `${stack.gatewayUrl}/api/v1/contacts`,
    { name: "Traced", email: "traced@tracing.test" },
    auth,
  );
  expect(created.status).toBe(201);
  contactId = created.body.id;
  call = (path, headers = {}) =>
    request("GET", `${stack.gatewayUrl}/api/v1${path}`, undefined, { ...auth, ...headers });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  await webhooks?.close();
  if (process.env.OTEL_LOG) process.stderr.write(readFileSync(LOG_FILE, "utf8"));
  rmSync(LOG_FILE, { force: true });
  // The databases of this stack go with it.
  const server = postgres(SERVER, { max: 1, onnotice: () => {} });
  for (const name of ["gateway", "crm", "scheduling", "timeline", "learning", "webhooks"])
    await server.unsafe(`drop database if exists "${names.database(name)}" with (force)`);
  await server.end();
});

/** The gateway's span of the request that answered with this request id, once it has been exported. */
const gatewaySpan = (requestId: string) =>
  waitFor(async () =>
    receiver.spans.find((s) => s.service === "gateway" && s.attributes["funil.request_id"] === requestId),
  );

/** The SERVER span of `service` in the trace, once exported. */
const serverSpan = (traceId: string, service: string, name: string) =>
  waitFor(async () =>
    receiver.spans.find(
      (s) => s.traceId === traceId && s.service === service && s.kind === SERVER_KIND && s.name === name,
    ),
  );

/** The span's parent, or its grandparent when the parent is the caller's CLIENT span of the same call. */
function callerOf(span: ReceivedSpan): ReceivedSpan | undefined {
  const parent = receiver.spans.find((s) => s.traceId === span.traceId && s.spanId === span.parentSpanId);
  if (parent?.kind !== CLIENT_KIND) return parent;
  expect(parent.name).toBe(span.name);
  return receiver.spans.find((s) => s.traceId === parent.traceId && s.spanId === parent.parentSpanId);
}

/** The span of `service` named `name` whose parent is `parent`, if exported yet. */
const spanUnder = (parent: ReceivedSpan, service: string, name: string) =>
  receiver.spans.find(
    (s) =>
      s.traceId === parent.traceId &&
      s.parentSpanId === parent.spanId &&
      s.service === service &&
      s.name === name,
  );
/** The same, waited for. */
const childOf = (parent: ReceivedSpan, service: string, name: string) =>
  waitFor(async () => spanUnder(parent, service, name));

/** The stack's log lines of `service`, parsed (pino's JSON), the others skipped. */
function logLines(service: string): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const raw of readFileSync(LOG_FILE, "utf8").split("\n")) {
    const bar = raw.indexOf(" | ");
    if (bar < 0 || raw.slice(0, bar).trim() !== service) continue;
    try {
      lines.push(JSON.parse(raw.slice(bar + 3)));
    } catch {}
  }
  return lines;
}

const CRM_GET = "funil.crm.v1.ContactService/GetContact";
const TIMELINE_SUMMARY = "funil.timeline.v1.SummaryService/GetContactSummary";

describe("tracing (OpenTelemetry, W3C trace context, OTLP/HTTP)", () => {
  it("a GET /contacts/{id} is one trace: the gateway's span, and crm's and timeline's as siblings under it", async () => {
    const res = await call(`/contacts/${contactId}`);
    expect(res.status).toBe(200);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    expect(gateway).toMatchObject({ name: ROUTE, kind: SERVER_KIND, parentSpanId: "" });
    expect(gateway.attributes).toEqual({
      "http.request.method": "GET",
      "http.route": "/api/v1/contacts/:id",
      "http.response.status_code": 200,
      "funil.workspace_id": workspaceId,
      "funil.request_id": res.headers.get("x-request-id"),
    });
    const crm = await serverSpan(gateway.traceId, "crm", CRM_GET);
    const timeline = await serverSpan(gateway.traceId, "timeline", TIMELINE_SUMMARY);
    expect(callerOf(crm)?.spanId).toBe(gateway.spanId);
    expect(callerOf(timeline)?.spanId).toBe(gateway.spanId);
    expect(crm.attributes).toMatchObject({
      "rpc.system": "connect_rpc",
      "rpc.service": "funil.crm.v1.ContactService",
      "rpc.method": "GetContact",
    });
    expect(crm.status).not.toBe(ERROR);
    // crm's statements, as spans under its method's: named by their first words, never a value.
    const statements = await waitFor(async () => {
      const found = receiver.spans.filter((s) => s.parentSpanId === crm.spanId && s.service === "crm");
      return found.length > 0 ? found : undefined;
    });
    for (const s of statements) {
      expect(s).toMatchObject({ kind: CLIENT_KIND, attributes: { "db.system.name": "postgresql" } });
      expect(s.name).toMatch(/^(select|with)\b/i);
      expect(JSON.stringify(s)).not.toContain(contactId);
      expect(JSON.stringify(s)).not.toContain(workspaceId);
    }
  });

  it("an incoming traceparent is continued: same trace id, the caller's span as parent", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parent = "00f067aa0ba902b7";
    const res = await call(`/contacts/${contactId}`, { traceparent: `00-${traceId}-${parent}-01` });
    expect(res.status).toBe(200);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    expect(gateway.traceId).toBe(traceId);
    expect(gateway.parentSpanId).toBe(parent);
    expect(callerOf(await serverSpan(traceId, "crm", CRM_GET))?.spanId).toBe(gateway.spanId);
  });

  it("a malformed traceparent is ignored: a 200 and a new trace", async () => {
    const res = await call(`/contacts/${contactId}`, { traceparent: "00-not-a-trace-01" });
    expect(res.status).toBe(200);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    expect(gateway.parentSpanId).toBe("");
    expect(gateway.traceId).toMatch(/^[0-9a-f]{32}$/);
    await serverSpan(gateway.traceId, "crm", CRM_GET);
  });

  it("an RPC that fails marks its span as an error (crm's NotFound), the 404 itself is no server error", async () => {
    const res = await call("/contacts/00000000-0000-4000-8000-000000000000");
    expect(res.status).toBe(404);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    expect(gateway.attributes["http.response.status_code"]).toBe(404);
    expect(gateway.status).not.toBe(ERROR);
    const crm = await serverSpan(gateway.traceId, "crm", CRM_GET);
    expect(crm.status).toBe(ERROR);
    expect(crm.attributes["rpc.connect_rpc.error_code"]).toBe("not_found");
    const client = receiver.spans.find((s) => s.spanId === crm.parentSpanId);
    expect(client).toMatchObject({ service: "gateway", kind: CLIENT_KIND, status: ERROR });
  });

  it("the calls of one batch keep their own parents: each crm span is its own request's", async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `batch-${i}-${Date.now()}`);
    const answers = await Promise.all(
      ids.map((id) => call(`/contacts/${contactId}`, { "x-request-id": id })),
    );
    expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
    const traces = new Set<string>();
    for (const id of ids) {
      const gateway = await gatewaySpan(id);
      traces.add(gateway.traceId);
      const crm = await serverSpan(gateway.traceId, "crm", CRM_GET);
      expect(callerOf(crm)?.spanId).toBe(gateway.spanId);
    }
    expect(traces.size).toBe(ids.length);
  });

  it("what the gateway does after an await stays under the request: the admin API's read of the workspace, the call to crm after it, and the gateway's own statements and events", async () => {
    const field = await admin("POST", `/workspaces/${workspaceId}/custom-fields`, {
      entity: "contact",
      fieldKey: `traced_${Date.now()}`,
      label: "Traced",
      type: "text",
    });
    expect(field.status).toBe(201);
    const gateway = await gatewaySpan(field.headers.get("x-request-id")!);
    // The workspace is read first, by the gateway itself: that statement is a span of the request…
    const read = await waitFor(async () =>
      receiver.spans.find(
        (s) => s.parentSpanId === gateway.spanId && s.service === "gateway" && /^select\b/i.test(s.name),
      ),
    );
    expect(read).toMatchObject({ kind: CLIENT_KIND, attributes: { "db.system.name": "postgresql" } });
    // …and the call to crm, made after that await, is the request's too.
    const crm = await serverSpan(gateway.traceId, "crm", "funil.crm.v1.CustomFieldService/CreateCustomField");
    expect(callerOf(crm)?.spanId).toBe(gateway.spanId);

    // The gateway's own change: its insert under the request, its event's publish under the request too.
    const ws = await admin("POST", "/workspaces", { name: "Traced workspace" });
    expect(ws.status).toBe(201);
    const created = await gatewaySpan(ws.headers.get("x-request-id")!);
    await childOf(created, "gateway", "insert into workspaces");
    const publish = await childOf(created, "gateway", "outbox publish");
    expect(publish.kind).toBe(PRODUCER_KIND);
  });

  it("a write's event carries the write's trace context: the outbox row's traceparent is its NATS header", async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const res = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/contacts`,
      { name: "Outboxed", email: `outboxed-${Date.now()}@tracing.test` },
      auth,
    );
    expect(res.status).toBe(201);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    const crm = await serverSpan(gateway.traceId, "crm", "funil.crm.v1.ContactService/UpsertContact");
    const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
    try {
      const consumer = await jetstream(nc).consumers.get(names.stream("EVENTS"), {
        filter_subjects: names.subject("events.>"),
        deliver_policy: DeliverPolicy.StartTime,
        opt_start_time: since,
      });
      const messages = await consumer.consume();
      let traceparent: string | undefined;
      const timer = setTimeout(() => messages.stop(), 10_000);
      for await (const m of messages) {
        if (!m.string().includes(res.body.id)) continue;
        traceparent = m.headers?.get("traceparent");
        break;
      }
      clearTimeout(timer);
      messages.stop();
      // The write ran inside crm's span: the event belongs to the request's trace, sent by the relay's
      // span under that one.
      const relay = await waitFor(async () => spanUnder(crm, "crm", "outbox publish"));
      expect(relay.kind).toBe(PRODUCER_KIND);
      expect(traceparent).toBe(`00-${gateway.traceId}-${relay.spanId}-01`);
    } finally {
      await nc.close();
    }
  });

  it("health checks are not traced: the probes and the gateway's polls of the services leave no span", async () => {
    expect((await request("GET", `${stack.gatewayUrl}/readyz`)).status).toBe(200);
    const res = await call(`/contacts/${contactId}`);
    await gatewaySpan(res.headers.get("x-request-id")!);
    expect(receiver.spans.filter((s) => /health|readyz|healthz/i.test(s.name))).toEqual([]);
  });
  it("a POST /opportunities with a webhook subscription is one trace: gateway, crm and its statements, the outbox relay, the webhooks fan-out and the delivery attempt, each under its cause", async () => {
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      request("POST", `${stack.gatewayUrl}/api/v1${path}`, body, { ...auth, ...headers });
    const path = `/deal-hook-${Date.now()}`;
    const subscribed = await post("/webhooks", { url: webhooks.url(path), events: ["opportunity.created"] });
    expect(subscribed.status).toBe(201);
    const res = await post("/opportunities", { title: "Traced deal", contactId, pipelineId });
    expect(res.status).toBe(201);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    expect(gateway).toMatchObject({ name: "POST /api/v1/opportunities", parentSpanId: "" });
    const crm = await waitFor(async () =>
      receiver.spans.find(
        (s) => s.traceId === gateway.traceId && s.service === "crm" && s.kind === SERVER_KIND,
      ),
    );
    expect(callerOf(crm)?.spanId).toBe(gateway.spanId);
    // crm's statements, the event's outbox row among them, under its method's span.
    await waitFor(async () =>
      receiver.spans.find((s) => s.parentSpanId === crm.spanId && /^insert into outbox/i.test(s.name)),
    );
    // The relay sends the event in the write's trace; each consumer continues it from the NATS header.
    const relay = await childOf(crm, "crm", "outbox publish");
    expect(relay.kind).toBe(PRODUCER_KIND);
    expect(relay.attributes["messaging.destination.name"]).toBe(names.subject("events.opportunity.created"));
    const consumed = await childOf(relay, "webhooks", "process webhooks-fanout");
    expect(consumed.kind).toBe(CONSUMER_KIND);
    expect((await childOf(relay, "timeline", "process timeline-events")).kind).toBe(CONSUMER_KIND);
    const fanOut = await childOf(consumed, "webhooks", "webhooks fan-out");
    expect(fanOut).toMatchObject({
      kind: INTERNAL_KIND,
      attributes: { "funil.event.type": "opportunity.created" },
    });
    // The delivery's job leaves through the webhooks outbox in the same trace, and its attempt follows.
    const jobRelay = await childOf(fanOut, "webhooks", "outbox publish");
    const attempt = await childOf(jobRelay, "webhooks", "webhook attempt");
    expect(attempt.kind).toBe(CLIENT_KIND);
    expect(attempt.attributes).toMatchObject({
      "http.request.method": "POST",
      "server.address": "127.0.0.1",
      "http.response.status_code": 200,
      "funil.webhook.attempt": 1,
      "funil.webhook.outcome": "delivered",
      "funil.event.type": "opportunity.created",
    });
    expect(attempt.status).not.toBe(ERROR);
    // The target's host only: never its path or query, where a receiver may keep a secret.
    expect(JSON.stringify(attempt)).not.toContain(path);
    expect(webhooks.at(path)).toHaveLength(1);
    const services = new Set(
      receiver.spans.filter((s) => s.traceId === gateway.traceId).map((s) => s.service),
    );
    expect([...services].sort()).toEqual(["crm", "gateway", "timeline", "webhooks"]);
  });

  it("a failed webhook attempt is an error span with its status, and its retry a span of its own in the same trace, numbered", async () => {
    const path = `/failing-${Date.now()}`;
    const subscribed = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/webhooks`,
      { url: webhooks.url(path, "fail"), events: ["contact.created"] },
      auth,
    );
    expect(subscribed.status).toBe(201);
    const res = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/contacts`,
      { name: "Hooked", email: `hooked-${Date.now()}@tracing.test` },
      auth,
    );
    expect(res.status).toBe(201);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    const attempts = await waitFor(async () => {
      const found = receiver.spans.filter(
        (s) => s.traceId === gateway.traceId && s.name === "webhook attempt" && s.status === ERROR,
      );
      return found.length >= 2 ? found : undefined;
    });
    const numbers = attempts.map((a) => Number(a.attributes["funil.webhook.attempt"])).sort((a, b) => a - b);
    expect(numbers.slice(0, 2)).toEqual([1, 2]);
    for (const a of attempts)
      expect(a.attributes).toMatchObject({
        "http.response.status_code": 500,
        "funil.webhook.outcome": "failed",
        "error.type": "500",
      });
    webhooks.set(path, "ok");
  });

  it("a caller's decision not to sample is kept downstream: nothing of its trace is recorded, the events it causes and their webhook jobs included", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const unsampled = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/contacts`,
      { name: "Unsampled", email: `unsampled-${Date.now()}@tracing.test` },
      { ...auth, traceparent: `00-${traceId}-b7ad6b7169203331-00` },
    );
    expect(unsampled.status).toBe(201);
    // A sampled write made after it, whose event is consumed after that one's (one consumer, in order).
    const sampledWrite = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/contacts`,
      { name: "Sampled", email: `sampled-${Date.now()}@tracing.test` },
      auth,
    );
    const gateway = await gatewaySpan(sampledWrite.headers.get("x-request-id")!);
    const relay = await childOf(
      await serverSpan(gateway.traceId, "crm", "funil.crm.v1.ContactService/UpsertContact"),
      "crm",
      "outbox publish",
    );
    await childOf(relay, "timeline", "process timeline-events");
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.spans.filter((s) => s.traceId === traceId)).toEqual([]);
    // No consumer started a trace of its own for that event: the message carried the decision.
    expect(receiver.spans.filter((s) => s.kind === CONSUMER_KIND && s.parentSpanId === "")).toEqual([]);
    // The gateway's lines of that request name the caller's ids, to find the caller's logs by.
    const requestId = unsampled.headers.get("x-request-id");
    const lines = await waitFor(async () => {
      const mine = logLines("gateway").filter((l) => l.reqId === requestId);
      return mine.some((l) => l.msg === "request completed") ? mine : undefined;
    });
    for (const line of lines) expect(line).toMatchObject({ trace_id: traceId, span_id: "b7ad6b7169203331" });
  });

  it('docs/operations.md §Tracing, Logs: every line of a traced request carries its trace_id and span_id, Fastify\'s own "incoming request" and "request completed" included, and a consumer\'s lines too', async () => {
    const res = await call(`/contacts/${contactId}`, { "x-request-id": `logged-${Date.now()}` });
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    const lines = await waitFor(async () => {
      const mine = logLines("gateway").filter((l) => l.reqId === gateway.attributes["funil.request_id"]);
      return mine.some((l) => l.msg === "request completed") ? mine : undefined;
    });
    expect(lines.map((l) => l.msg)).toEqual(
      expect.arrayContaining(["incoming request", "request completed"]),
    );
    for (const line of lines)
      expect(line).toMatchObject({ trace_id: gateway.traceId, span_id: gateway.spanId });
    // Each field once: the request's logger is bound to its span, and the mixin adds nothing on top.
    const raw = readFileSync(LOG_FILE, "utf8")
      .split("\n")
      .find(
        (l) => l.includes(String(gateway.attributes["funil.request_id"])) && l.includes("incoming request"),
      );
    expect(raw?.split('"trace_id"').length).toBe(2);
    // A platform message that fails its schema, sent with a trace context: learning's consumer continues
    // it, and the line it writes about the message names that trace.
    const traceId = "5b8efff798038103d269b633813fc60c";
    const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
    try {
      const h = headers();
      h.set("traceparent", `00-${traceId}-eee19b7ec3c1b174-01`);
      await jetstream(nc).publish(names.subject("platform.users"), new TextEncoder().encode("not json"), {
        headers: h,
        msgID: `traced-${Date.now()}`,
      });
    } finally {
      await nc.close();
    }
    const consumed = await waitFor(async () =>
      receiver.spans.find(
        (s) => s.traceId === traceId && s.service === "learning" && s.kind === CONSUMER_KIND,
      ),
    );
    expect(consumed.parentSpanId).toBe("eee19b7ec3c1b174");
    const refused = await waitFor(async () =>
      logLines("learning").find((l) => String(l.msg).startsWith("platform message refused")),
    );
    expect(refused).toMatchObject({ trace_id: traceId, span_id: consumed.spanId });
  });

  it("a consumer's statements are spans of the message it handles: timeline's ledger of a new deal, under its consumer span in the write's trace", async () => {
    const res = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/opportunities`,
      { title: "Ledgered deal", contactId, pipelineId },
      auth,
    );
    expect(res.status).toBe(201);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    const consumed = await waitFor(async () =>
      receiver.spans.find(
        (s) =>
          s.traceId === gateway.traceId && s.service === "timeline" && s.name === "process timeline-events",
      ),
    );
    expect(consumed.kind).toBe(CONSUMER_KIND);
    const statement = await waitFor(async () =>
      receiver.spans.find((s) => s.parentSpanId === consumed.spanId && s.service === "timeline"),
    );
    expect(statement).toMatchObject({ kind: CLIENT_KIND, attributes: { "db.system.name": "postgresql" } });
  });

  it("a batch consumer (timeline's ingest) gives each message a span in the trace its header carries", async () => {
    const traceId = "6e0c63257de34c926f9efcd03899ac50";
    const parent = "53995c3f42cd8ad8";
    const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
    try {
      const h = headers();
      h.set("traceparent", `00-${traceId}-${parent}-01`);
      // Refused by the contract (not JSON): handled all the same, and sent to the dead letters.
      await jetstream(nc).publish(names.subject("ingest.email"), new TextEncoder().encode("not json"), {
        headers: h,
        msgID: `ingest-traced-${Date.now()}`,
      });
    } finally {
      await nc.close();
    }
    const consumed = await waitFor(async () =>
      receiver.spans.find((s) => s.traceId === traceId && s.name === "process timeline-emails"),
    );
    expect(consumed).toMatchObject({ service: "timeline", kind: CONSUMER_KIND, parentSpanId: parent });
    expect(consumed.attributes["messaging.batch.message_count"]).toBeGreaterThanOrEqual(1);
  });
});

describe("Redis spans of a booking (scheduling's booking guard through @funil/db/redis)", () => {
  it("POST /appointments: each Redis command of the hold is a CLIENT span under scheduling's CreateAppointment", async () => {
    const define = (path: string, body: unknown) => admin("POST", `/workspaces/${workspaceId}${path}`, body);
    const member = await define("/members", {
      name: "Booked",
      email: "booked@tracing.test",
      role: "atendente",
    });
    const calendar = await define("/calendars", {
      key: "traced",
      name: "Traced",
      durationMin: 30,
      dailyCap: 5,
      timezone: "UTC",
      availability: [0, 1, 2, 3, 4, 5, 6].map((weekday) => ({ weekday, start: "00:00", end: "24:00" })),
      assigneeUserIds: [member.body.id],
    });
    expect(calendar.status, JSON.stringify(calendar.body)).toBe(201);
    const key = await define("/keys", { name: "booking", scopes: ["calendars.write"] });
    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
    const res = await request(
      "POST",
      `${stack.gatewayUrl}/api/v1/appointments`,
      {
        calendarId: calendar.body.id,
        contactId,
        startAt: `${day}T10:00:00.000Z`,
        assigneeUserId: member.body.id,
      },
      { authorization: `Bearer ${key.body.secret}` },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const gateway = await gatewaySpan(res.headers.get("x-request-id")!);
    const booking = await serverSpan(
      gateway.traceId,
      "scheduling",
      "funil.scheduling.v1.AppointmentService/CreateAppointment",
    );
    // The hold (one EVAL), the day's counter rebuilt from PostgreSQL (SET, EVAL), the release (EVAL).
    const redis = await waitFor(async () => {
      const found = receiver.spans.filter(
        (s) =>
          s.traceId === gateway.traceId &&
          s.service === "scheduling" &&
          s.attributes["db.system.name"] === "redis",
      );
      return found.length >= 4 ? found : undefined;
    });
    expect(redis.map((s) => s.name).sort()).toEqual(["EVAL", "EVAL", "EVAL", "SET"]);
    for (const span of redis) {
      expect(span).toMatchObject({ kind: CLIENT_KIND, parentSpanId: booking.spanId });
      expect(span.attributes["db.operation.name"]).toBe(span.name);
    }
  });
});
