// The bare baseline of the crm-reads bench: GET /tasks, /members, /pipelines, /custom-fields and /funnel as a
// developer would write them in one process, without the architecture (no gateway, no Connect hop, no
// protobuf). A Fastify app that checks the bearer key's SHA-256 against an in-memory map, runs each page's
// plain statements on crm's database (one pool of postgres.js' default size, no column transform), maps
// the columns to the API's JSON by hand and pages with the API's signed cursor (bench/crm-reads.mjs checks
// the bodies equal the gateway's before it measures). Only what the bench sends is handled: the task
// filters assigneeUserId and open with limit and cursor, a whole list's first page (limit, default 500),
// the funnel of every pipeline with an optional from/to. Started by bench/crm-reads.mjs as its own process,
// so /proc shows its CPU:
//   BARE_CRM_DB=postgres://…/funil_x_crm BARE_GATEWAY_DB=postgres://…/funil_x_gateway CURSOR_KEYS=… \
//   node bench/crm-reads-bare.mjs
// It prints its port on stdout once it listens. Its key map is loaded at start: keys made later are unknown.
import { createHash } from "node:crypto";
import { decodeCursor, encodeCursor, useCursorKeys } from "@funil/rpc";
import Fastify from "fastify";
import postgres from "postgres";

// The stack's cursor keys (the bench passes them to both), so a cursor either side issues is the same.
useCursorKeys(process.env.CURSOR_KEYS?.split(","), () => {});

const sql = postgres(process.env.BARE_CRM_DB, {
  max: 10,
  onnotice: () => {},
  connection: { application_name: "bench_crmreads_bare" },
});

const keys = new Map();
{
  const gateway = postgres(process.env.BARE_GATEWAY_DB, { max: 1, onnotice: () => {} });
  for (const k of await gateway`select hash, workspace_id, scopes from api_keys where revoked_at is null`)
    keys.set(k.hash, { workspaceId: k.workspace_id, scopes: new Set(k.scopes) });
  await gateway.end();
}

const error = (code, message) => ({ error: { code, message } });
const iso = (d) => (d ? d.toISOString() : null);

/** The caller's workspace if its key holds one of `scopes`, or undefined after answering 401/403. */
function authorize(req, reply, ...scopes) {
  const header = req.headers.authorization;
  const key = header?.startsWith("Bearer ")
    ? keys.get(createHash("sha256").update(header.slice(7)).digest("hex"))
    : undefined;
  if (!key) return void reply.code(401).send(error("unauthorized", "missing or unknown key"));
  if (!scopes.some((s) => key.scopes.has(s)))
    return void reply.code(403).send(error("missing_scope", `needs ${scopes.join(" or ")}`));
  return key.workspaceId;
}

/**
 * The first page of a list the API answers whole: `limit` rows (default 500), and a cursor holding the
 * last one's index and id when there are more.
 */
function wholePage(rows, limit, list, bound, toJson) {
  const data = rows.slice(0, limit);
  return {
    data: data.map(toJson),
    nextCursor: rows.length > limit ? encodeCursor(list, bound, [limit - 1, data.at(-1).id]) : null,
  };
}

const taskJson = (r) => ({
  id: r.id,
  contactId: r.contact_id,
  opportunityId: r.opportunity_id,
  title: r.title,
  body: r.body,
  assigneeUserId: r.assignee_user_id,
  dueAt: iso(r.due_at),
  completedAt: iso(r.completed_at),
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

const memberJson = (r) => ({
  id: r.id,
  name: r.name,
  email: r.email,
  role: r.role,
  active: r.active,
  createdAt: r.created_at.toISOString(),
});

const customFieldJson = (r) => ({
  id: r.id,
  entity: r.entity,
  fieldKey: r.field_key,
  label: r.label,
  type: r.type,
  options: r.options,
  createdAt: r.created_at.toISOString(),
});

const app = Fastify({ logger: false });

app.get("/api/v1/tasks", async (req, reply) => {
  const ws = authorize(req, reply, "tasks.read");
  if (!ws) return reply;
  const { assigneeUserId, cursor } = req.query;
  const open = req.query.open === undefined ? undefined : req.query.open === "true";
  const limit = Number(req.query.limit ?? 50);
  const bound = { assigneeUserId, open, workspaceId: ws };
  const after = cursor ? decodeCursor(cursor, "tasks", bound, ["timestamp", "string"]) : undefined;
  const rows = await sql`
    select id, contact_id, opportunity_id, title, body, assignee_user_id, due_at, completed_at, created_at,
      updated_at
    from tasks
    where workspace_id = ${ws}
      ${assigneeUserId ? sql`and assignee_user_id = ${assigneeUserId}` : sql``}
      ${open === undefined ? sql`` : sql`and done = ${!open}`}
      ${after ? sql`and (created_at, id) > (${after[0]}, ${after[1]})` : sql``}
    order by created_at, id
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    data: page.map(taskJson),
    nextCursor:
      rows.length > limit ? encodeCursor("tasks", bound, [last.created_at.toISOString(), last.id]) : null,
  };
});

app.get("/api/v1/members", async (req, reply) => {
  const ws = authorize(req, reply, "members.read");
  if (!ws) return reply;
  const limit = Number(req.query.limit ?? 500);
  const rows = await sql`
    select id, name, email, role, active, created_at from members
    where workspace_id = ${ws}
    order by created_at, id
    limit ${limit + 1}`;
  return wholePage(rows, limit, "members", { workspaceId: ws }, memberJson);
});

app.get("/api/v1/pipelines", async (req, reply) => {
  const ws = authorize(req, reply, "opportunities.read");
  if (!ws) return reply;
  const limit = Number(req.query.limit ?? 500);
  // One row per stage, the pipelines in creation order; grouped here.
  const rows = await sql`
    select p.id, p.name, s.id as stage_id, s.name as stage_name, s.position
    from (
      select id, name, created_at from pipelines where workspace_id = ${ws}
      order by created_at, id limit ${limit + 1}
    ) p
    left join stages s on s.pipeline_id = p.id
    order by p.created_at, p.id, s.position`;
  const pipelines = [];
  for (const r of rows) {
    if (pipelines.at(-1)?.id !== r.id) pipelines.push({ id: r.id, name: r.name, stages: [] });
    if (r.stage_id !== null)
      pipelines.at(-1).stages.push({ id: r.stage_id, name: r.stage_name, position: r.position });
  }
  return wholePage(pipelines, limit, "pipelines", { workspaceId: ws }, (p) => p);
});

app.get("/api/v1/custom-fields", async (req, reply) => {
  const ws = authorize(req, reply, "contacts.read", "opportunities.read");
  if (!ws) return reply;
  const { entity } = req.query;
  const limit = Number(req.query.limit ?? 500);
  const rows = await sql`
    select id, entity, field_key, label, type, options, created_at from custom_field_defs
    where workspace_id = ${ws} ${entity ? sql`and entity = ${entity}` : sql``}
    order by entity, created_at, id
    limit ${limit + 1}`;
  return wholePage(rows, limit, "custom-fields", { entity, workspaceId: ws }, customFieldJson);
});

const tally = () => ({ count: 0, valueCents: 0 });

app.get("/api/v1/funnel", async (req, reply) => {
  const ws = authorize(req, reply, "opportunities.read");
  if (!ws) return reply;
  const from = req.query.from ? new Date(req.query.from) : undefined;
  const to = req.query.to ? new Date(req.query.to) : undefined;
  const inRange = (column) =>
    sql`${from ? sql`${column} >= ${from}` : sql`true`} and ${to ? sql`${column} < ${to}` : sql`true`}`;
  const created = inRange(sql`created_at`);
  const closed = sql`(status = 'won' and ${inRange(sql`won_at`)}) or (status = 'lost' and ${inRange(sql`lost_at`)})`;
  // The stages in order, and one pass over the deals: by stage and status, those created and those closed in the range.
  const [stages, groups] = await Promise.all([
    sql`
      select s.id, s.name from stages s join pipelines p on p.id = s.pipeline_id
      where s.workspace_id = ${ws}
      order by p.created_at, p.id, s.position`,
    sql`
      select stage_id, status,
        count(*) filter (where ${created})::int as created,
        coalesce(sum(value_cents) filter (where ${created}), 0)::bigint as created_cents,
        count(*) filter (where ${closed})::int as closed,
        coalesce(sum(value_cents) filter (where ${closed}), 0)::bigint as closed_cents
      from opportunities
      where workspace_id = ${ws} and trashed_at is null
      group by stage_id, status`,
  ]);
  const byStage = new Map(stages.map((s) => [s.id, { stageId: s.id, name: s.name, ...tally() }]));
  const byStatus = { open: tally(), won: tally(), lost: tally() };
  const closedInRange = { won: tally(), lost: tally() };
  const add = (t, count, cents) => {
    t.count += count;
    t.valueCents += Number(cents);
  };
  for (const g of groups) {
    const stage = byStage.get(g.stage_id);
    if (stage) add(stage, g.created, g.created_cents);
    add(byStatus[g.status], g.created, g.created_cents);
    if (g.status !== "open") add(closedInRange[g.status], g.closed, g.closed_cents);
  }
  const statusList = Object.values(byStatus);
  return {
    from: from ? from.toISOString() : null,
    to: to ? to.toISOString() : null,
    pipelineId: null,
    total: {
      count: statusList.reduce((s, t) => s + t.count, 0),
      valueCents: statusList.reduce((s, t) => s + t.valueCents, 0),
    },
    byStage: [...byStage.values()],
    byStatus,
    closedInRange,
  };
});

const address = await app.listen({ port: 0, host: "127.0.0.1" });
console.log(new URL(address).port);
process.once("SIGTERM", () =>
  app
    .close()
    .then(() => sql.end({ timeout: 2 }))
    .then(() => process.exit(0)),
);
