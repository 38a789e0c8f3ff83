// The bare baseline of the webhooks reads bench (bench/webhooks-reads.mjs): the webhooks service's read
// routes and the admin API's workspace list as a developer would write them in one process, without the
// architecture (no gateway, no Connect hop, no protobuf, no key cache, no NATS ack floor). A Fastify app that
// checks the bearer key's SHA-256 against an in-memory map (the admin routes: the admin token, compared as
// the gateway does, by the SHA-256 of both in constant time), runs each page's plain statements (one pool of
// postgres.js' default size per database, webhooks' and the gateway's, no column transform), maps the
// columns to the API's JSON by hand and pages with the API's signed cursors (@funil/rpc's encodeCursor).
// A subscription's deliveries and attempts read the subscription first, for its 404, then the page; the
// event types a key may read come from the catalog's scopes. The event-types catalog is the static document
// the gateway serves, loaded once. Only what the bench sends is read (first pages, `limit`): a cursor is
// not followed. webhooks-reads.mjs checks the bodies equal the gateway's before it measures. Started by
// webhooks-reads.mjs as its own process, so /proc shows its CPU:
//   BARE_WEBHOOKS_DB=postgres://…/funil_x_webhooks BARE_GATEWAY_DB=postgres://…/funil_x_gateway \
//   BARE_ADMIN_TOKEN=… CURSOR_KEYS=… node bench/webhooks-reads-bare.mjs
// It prints its port on stdout once it listens. Its key map is loaded at start: keys made later are unknown.
import { createHash, timingSafeEqual } from "node:crypto";
import { encodeCursor, useCursorKeys } from "@funil/rpc";
import Fastify from "fastify";
import postgres from "postgres";
import { EVENT_CATALOG } from "../services/gateway/dist/events/catalog.js";

// The stack's cursor keys (the bench passes them to both), so a cursor either side issues is the same.
useCursorKeys(process.env.CURSOR_KEYS?.split(","), () => {});

const options = { max: 10, onnotice: () => {}, connection: { application_name: "bench_hookreads_bare" } };
const webhooks = postgres(process.env.BARE_WEBHOOKS_DB, options);
const gateway = postgres(process.env.BARE_GATEWAY_DB, options);

const keys = new Map();
for (const k of await gateway`select hash, workspace_id, scopes from api_keys where revoked_at is null`)
  keys.set(k.hash, { workspaceId: k.workspace_id, scopes: new Set(k.scopes) });
const sha256 = (text) => createHash("sha256").update(text).digest();
const adminHash = sha256(process.env.BARE_ADMIN_TOKEN);

const error = (code, message) => ({ error: { code, message } });
const iso = (d) => (d === null ? null : d.toISOString());
const bearer = (req) => /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];

/** The caller's key, or the 401/403 sent: `scopes` are the ones any of which opens the route. */
function caller(req, reply, scopes) {
  const token = bearer(req);
  const key = token === undefined ? undefined : keys.get(sha256(token).toString("hex"));
  if (!key) {
    reply.code(401).send(error("unauthorized", "missing or unknown key"));
    return undefined;
  }
  if (!scopes.some((s) => key.scopes.has(s))) {
    reply.code(403).send(error("missing_scope", `needs ${scopes.join(" or ")}`));
    return undefined;
  }
  return key;
}

const subscriptionJson = (r) => ({
  id: r.id,
  url: r.url,
  events: r.events,
  description: r.description,
  active: r.active,
  failingSince: iso(r.failing_since),
  disabledReason: r.disabled_reason,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

const deliveryJson = (r) => ({
  id: r.id,
  subscriptionId: r.subscription_id,
  event: r.event,
  status: r.status,
  attempts: r.attempts,
  responseStatus: r.response_status,
  lastError: r.last_error,
  lastAttemptAt: iso(r.last_attempt_at),
  createdAt: r.created_at.toISOString(),
});

const attemptJson = (r) => ({
  id: r.id,
  deliveryId: r.delivery_id,
  event: r.event,
  at: r.at.toISOString(),
  status: r.succeeded ? "succeeded" : "failed",
  responseStatus: r.response_status,
  durationMs: r.duration_ms,
  responseBody: r.response_body,
  error: r.error,
});

/** The log keeps the actor as `admin`, `key:<id>` or `system`. */
function actorJson(text) {
  if (text === "admin") return { type: "admin", id: null };
  if (text.startsWith("key:")) return { type: "key", id: text.slice(4) };
  return { type: "system", id: null };
}

const auditJson = (r) => ({
  id: r.id,
  type: r.type,
  entity: r.entity_type,
  entityId: r.entity_id ?? "",
  actor: actorJson(r.actor),
  requestId: r.request_id,
  changes: r.changes ?? [],
  occurredAt: r.occurred_at.toISOString(),
});

const workspaceJson = (r) => ({
  id: r.id,
  name: r.name,
  operator: r.operator,
  createdAt: r.created_at.toISOString(),
});

/** A whole list's first page: `limit` rows of limit + 1 read, the cursor of the next page at [index, id]. */
function wholePage(rows, limit, list, workspaceId, json) {
  const page = rows.slice(0, limit);
  return {
    data: page.map(json),
    nextCursor: rows.length > limit ? encodeCursor(list, { workspaceId }, [limit - 1, page.at(-1).id]) : null,
  };
}

const subscriptionColumns = webhooks`
  id, url, events, description, active, failing_since, disabled_reason, created_at, updated_at`;
const subscriptionOf = async (workspaceId, id) =>
  (
    await webhooks`select ${subscriptionColumns} from subscriptions where workspace_id = ${workspaceId} and id = ${id}`
  )[0];

const app = Fastify({ logger: false });
const MANAGE = ["webhooks.manage"];

app.get("/api/v1/webhooks", async (req, reply) => {
  const key = caller(req, reply, MANAGE);
  if (!key) return reply;
  const limit = Number(req.query.limit ?? 500);
  const rows = await webhooks`
    select ${subscriptionColumns} from subscriptions where workspace_id = ${key.workspaceId}
    order by created_at, id limit ${limit + 1}`;
  return wholePage(rows, limit, "webhooks", key.workspaceId, subscriptionJson);
});

// The catalog, the same for every caller: one page of it.
app.get("/api/v1/webhooks/event-types", async (req, reply) => {
  if (!caller(req, reply, MANAGE)) return reply;
  return { data: EVENT_CATALOG, nextCursor: null };
});

app.get("/api/v1/webhooks/:id", async (req, reply) => {
  const key = caller(req, reply, MANAGE);
  if (!key) return reply;
  const sub = await subscriptionOf(key.workspaceId, req.params.id);
  if (!sub) return reply.code(404).send(error("not_found", "webhook subscription not found"));
  return subscriptionJson(sub);
});

// The 50 most recent, `limit` of them; never a cursor.
app.get("/api/v1/webhooks/:id/deliveries", async (req, reply) => {
  const key = caller(req, reply, MANAGE);
  if (!key) return reply;
  const [sub] = await webhooks`
    select id from subscriptions where workspace_id = ${key.workspaceId} and id = ${req.params.id}`;
  if (!sub) return reply.code(404).send(error("not_found", "webhook subscription not found"));
  const rows = await webhooks`
    select id, subscription_id, event, status, attempts, response_status, last_error, last_attempt_at, created_at
    from deliveries where subscription_id = ${sub.id}
    order by created_at desc, id desc limit ${Math.min(50, Number(req.query.limit ?? 50))}`;
  return { data: rows.map(deliveryJson), nextCursor: null };
});

app.get("/api/v1/webhooks/:id/attempts", async (req, reply) => {
  const key = caller(req, reply, MANAGE);
  if (!key) return reply;
  const [sub] = await webhooks`
    select id from subscriptions where workspace_id = ${key.workspaceId} and id = ${req.params.id}`;
  if (!sub) return reply.code(404).send(error("not_found", "webhook subscription not found"));
  const limit = Number(req.query.limit ?? 100);
  const rows = await webhooks`
    select id, delivery_id, event, at, succeeded, response_status, duration_ms, response_body, error
    from attempts where subscription_id = ${sub.id}
    order by at desc, id desc limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    data: page.map(attemptJson),
    nextCursor:
      rows.length > limit
        ? encodeCursor(`attempts:${sub.id}`, { workspaceId: key.workspaceId }, [
            last.at.toISOString(),
            last.id,
          ])
        : null,
  };
});

// Any read scope of a subscribable event opens it; it lists the types of the key's read scopes.
const READ_SCOPES = [...new Set(EVENT_CATALOG.map((e) => e.scope))];
app.get("/api/v1/events", async (req, reply) => {
  const key = caller(req, reply, READ_SCOPES);
  if (!key) return reply;
  const types = EVENT_CATALOG.filter((e) => key.scopes.has(e.scope)).map((e) => e.type);
  const limit = Number(req.query.limit ?? 100);
  const rows = await webhooks`
    select seq, body from event_log where workspace_id = ${key.workspaceId} and type = any(${types})
    order by seq limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  return {
    data: page.map((r) => JSON.parse(r.body)),
    nextCursor:
      rows.length > limit
        ? encodeCursor("events", { workspaceId: key.workspaceId }, [Number(page.at(-1).seq)])
        : null,
  };
});

app.get("/api/v1/audit", async (req, reply) => {
  const key = caller(req, reply, ["audit.read"]);
  if (!key) return reply;
  const limit = Number(req.query.limit ?? 100);
  const rows = await webhooks`
    select id, seq, type, entity_type, entity_id, actor, request_id, changes, occurred_at
    from event_log where workspace_id = ${key.workspaceId} and actor is not null
    order by seq limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  return {
    data: page.map(auditJson),
    nextCursor:
      rows.length > limit
        ? encodeCursor("audit", { workspaceId: key.workspaceId }, [Number(page.at(-1).seq)])
        : null,
  };
});

app.get("/admin/v1/workspaces", async (req, reply) => {
  const token = bearer(req);
  if (token === undefined || !timingSafeEqual(sha256(token), adminHash))
    return reply
      .code(401)
      .send(error("unauthorized", "admin routes need Authorization: Bearer <ADMIN_TOKEN>"));
  const limit = Number(req.query.limit ?? 500);
  const rows = await gateway`
    select id, name, operator, created_at from workspaces order by created_at, id limit ${limit + 1}`;
  return wholePage(rows, limit, "workspaces", "admin", workspaceJson);
});

const address = await app.listen({ port: 0, host: "127.0.0.1" });
console.log(new URL(address).port);
process.once("SIGTERM", () =>
  app
    .close()
    .then(() => Promise.all([webhooks.end({ timeout: 2 }), gateway.end({ timeout: 2 })]))
    .then(() => process.exit(0)),
);
