// The bare baseline of the benchmark (docs/benchmarks.md): what the hardware gives for the same answer without the
// architecture, written as a developer would in one process. A Fastify app that checks the bearer key's
// SHA-256 against an in-memory map, runs each page's one statement on crm's database (one pool of
// postgres.js' default size, no column transform), maps the columns to the API's JSON by hand and returns
// the JSON the gateway returns (run.mjs checks that the bodies are equal before it measures anything).
//
// The single reads compose timeline's answer (the human touches, a deal's last activity) as the gateway
// does: the same statements on timeline's database, beside crm's, at once.
//
// Run as its own process so that its CPU time can be read from /proc:
//   BARE_CRM_DB=postgres://…/funil_bench_crm BARE_TIMELINE_DB=postgres://…/funil_bench_timeline \
//   BARE_GATEWAY_DB=postgres://…/funil_bench_gateway node bench/bare.mjs
// It prints its port on stdout once it listens. Its key map is loaded at start: keys made later are unknown.
import { createHash } from "node:crypto";
import { encodeCursor, useCursorKeys } from "@funil/rpc";
import Fastify from "fastify";
import postgres from "postgres";

// The stack's cursor keys (the bench passes them to both), so a cursor either side issues is the same.
useCursorKeys(process.env.CURSOR_KEYS?.split(","), () => {});

// One pool per database of postgres.js' default size, the columns as PostgreSQL names them.
const options = { max: 10, onnotice: () => {} };
const crm = postgres(process.env.BARE_CRM_DB, { ...options, connection: { application_name: "bench_bare" } });
const timeline = postgres(process.env.BARE_TIMELINE_DB, {
  ...options,
  connection: { application_name: "bench_bare" },
});
const gateway = postgres(process.env.BARE_GATEWAY_DB, { max: 1, onnotice: () => {} });

const keys = new Map();
for (const k of await gateway`select hash, workspace_id, scopes from api_keys where revoked_at is null`)
  keys.set(k.hash, { workspaceId: k.workspace_id, scopes: new Set(k.scopes) });
await gateway.end();

const contactColumns = crm`
  id, workspace_id, name, phone, email, company, company_id, role, cpf, notes, tags, status,
  owner_user_id, origin, custom_fields, url, utm, created_at, updated_at`;
const dealColumns = crm`
  id, workspace_id, title, pipeline_id, stage_id, contact_id, status, value_cents::text as value_cents,
  currency, owner_user_id, temperature, tags, loss_reason, expected_close_at, won_at, lost_at, custom_fields,
  source, utm, origin, url, stage_changed_at, created_at, updated_at, trashed_at`;

const utm = (u) => ({
  source: u?.source ?? null,
  medium: u?.medium ?? null,
  campaign: u?.campaign ?? null,
  term: u?.term ?? null,
  content: u?.content ?? null,
});
const contactJson = (r) => ({
  id: r.id,
  name: r.name,
  phone: r.phone,
  email: r.email,
  company: r.company,
  companyId: r.company_id,
  role: r.role,
  cpf: r.cpf,
  notes: r.notes,
  tags: r.tags,
  status: r.status,
  ownerUserId: r.owner_user_id,
  origin: r.origin,
  customFields: r.custom_fields,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  url: r.url,
  utm: utm(r.utm),
});
const iso = (d) => (d ? d.toISOString() : null);
const dealJson = (r) => ({
  id: r.id,
  title: r.title,
  pipelineId: r.pipeline_id,
  stageId: r.stage_id,
  contactId: r.contact_id,
  status: r.status,
  valueCents: Number(r.value_cents),
  currency: r.currency,
  ownerUserId: r.owner_user_id,
  temperature: r.temperature,
  tags: r.tags,
  lossReason: r.loss_reason,
  expectedCloseAt: iso(r.expected_close_at),
  wonAt: iso(r.won_at),
  lostAt: iso(r.lost_at),
  customFields: r.custom_fields,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  source: r.source,
  utm: utm(r.utm),
  origin: r.origin,
  stageChangedAt: r.stage_changed_at.toISOString(),
  url: r.url,
});

const error = (code, message) => ({ error: { code, message } });

/** timeline's contact summary (services/timeline/src/store/summaries.ts contactTouches). */
async function contactTouches(ws, contactId) {
  const [t] = await timeline`
    select first_at, last_at from contact_touches where workspace_id = ${ws} and contact_id = ${contactId}`;
  return { firstHumanTouchAt: iso(t?.first_at), lastHumanTouchAt: iso(t?.last_at) };
}

/** timeline's deal summary (summaries.ts dealSummary): one statement, a probe only when touches straddle the deal's creation. */
async function dealSummary(ws, id) {
  const [r] = await timeline`
    select d.contact_id, d.created_at, t.first_at, t.last_at,
      (select max(at) from activities a where a.workspace_id = ${ws} and a.opportunity_id = ${id}) as last_activity
    from (values (1)) as one
    left join deals d on d.workspace_id = ${ws} and d.id = ${id}
    left join contact_touches t on t.workspace_id = ${ws} and t.contact_id = d.contact_id`;
  let first = r.first_at;
  const last = r.last_at;
  if (!last || last < r.created_at) first = null;
  else if (first < r.created_at) {
    const [f] = await timeline`
      select created_at from interactions
      where workspace_id = ${ws} and contact_id = ${r.contact_id} and actor = 'user' and created_at >= ${r.created_at}
      order by created_at limit 1`;
    first = f?.created_at ?? last;
  }
  return {
    firstHumanTouchAt: iso(first),
    lastHumanTouchAt: first ? iso(last) : null,
    lastActivityAt: iso(r.last_activity),
  };
}

/** The caller's workspace, or undefined after answering 401/403. */
function authorize(req, reply, scope) {
  const header = req.headers.authorization;
  const key = header?.startsWith("Bearer ")
    ? keys.get(createHash("sha256").update(header.slice(7)).digest("hex"))
    : undefined;
  if (!key) return void reply.code(401).send(error("unauthorized", "missing or unknown key"));
  if (!key.scopes.has(scope)) return void reply.code(403).send(error("missing_scope", `needs ${scope}`));
  return key.workspaceId;
}

/**
 * A keyset page as crm issues it: one row more than the limit tells whether a next cursor exists; the
 * cursor is bound to the list's filters and the workspace.
 */
function page(rows, limit, list, filters, toJson) {
  const data = rows.slice(0, limit);
  const last = data.at(-1);
  const nextCursor =
    rows.length > limit && last
      ? encodeCursor(list, filters, [last.created_at.toISOString(), last.id])
      : null;
  return { data: data.map(toJson), nextCursor };
}

const app = Fastify({ logger: false });

app.get("/api/v1/contacts/:id", async (req, reply) => {
  const ws = authorize(req, reply, "contacts.read");
  if (!ws) return reply;
  const [[row], touches] = await Promise.all([
    crm`select ${contactColumns} from contacts where workspace_id = ${ws} and id = ${req.params.id}`,
    contactTouches(ws, req.params.id),
  ]);
  if (!row) return reply.code(404).send(error("not_found", "contact not found"));
  return { ...contactJson(row), ...touches };
});

app.get("/api/v1/contacts", async (req, reply) => {
  const ws = authorize(req, reply, "contacts.read");
  if (!ws) return reply;
  const limit = Number(req.query.limit ?? 50);
  const rows = await crm`
    select ${contactColumns} from contacts where workspace_id = ${ws} and status = 'active'
    order by created_at, id limit ${limit + 1}`;
  return page(rows, limit, "contacts", { status: "active", workspaceId: ws }, contactJson);
});

app.get("/api/v1/opportunities/:id", async (req, reply) => {
  const ws = authorize(req, reply, "opportunities.read");
  if (!ws) return reply;
  const [[row], summary] = await Promise.all([
    crm`
      select ${dealColumns} from opportunities
      where workspace_id = ${ws} and id = ${req.params.id} and trashed_at is null`,
    dealSummary(ws, req.params.id),
  ]);
  if (!row) return reply.code(404).send(error("not_found", "opportunity not found"));
  return { ...dealJson(row), ...summary };
});

app.get("/api/v1/opportunities", async (req, reply) => {
  const ws = authorize(req, reply, "opportunities.read");
  if (!ws) return reply;
  const limit = Number(req.query.limit ?? 50);
  const rows = await crm`
    select ${dealColumns} from opportunities where workspace_id = ${ws} and trashed_at is null
    order by created_at, id limit ${limit + 1}`;
  return page(rows, limit, "opportunities", { workspaceId: ws }, dealJson);
});

// The upsert the benchmark sends (a known phone, tags to add), with crm's locking: the row is found by
// its phone digits under FOR UPDATE and written only when the tags change. Other bodies are not handled.
app.post("/api/v1/contacts", async (req, reply) => {
  const ws = authorize(req, reply, "contacts.write");
  if (!ws) return reply;
  const digits = String(req.body?.phone ?? "").replace(/\D/g, "");
  const tags = req.body?.tags ?? [];
  const row = await crm.begin(async (tx) => {
    const [found] = await tx`
      select ${contactColumns} from contacts where workspace_id = ${ws} and phone_digits = ${digits} for update`;
    if (!found || tags.every((t) => found.tags.includes(t))) return found;
    const [updated] = await tx`
      update contacts set tags = ${[...new Set([...found.tags, ...tags])]}, updated_at = now()
      where id = ${found.id} returning ${contactColumns}`;
    return updated;
  });
  if (!row)
    return reply.code(422).send(error("validation_failed", "the bare baseline only updates known phones"));
  return contactJson(row);
});

const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
console.log(new URL(address).port);
process.once("SIGTERM", () =>
  app
    .close()
    .then(() => Promise.all([crm.end({ timeout: 2 }), timeline.end({ timeout: 2 })]))
    .then(() => process.exit(0)),
);
