// The bare route of the timeline bench: GET /interactions as a developer would write it in one process,
// without the architecture (no gateway, no Connect hop, no protobuf). A Fastify app that checks the bearer
// key's SHA-256 against an in-memory map, runs the one statement of the page on the timeline's database
// (one pool of postgres.js' default size, no column transform), maps the columns to the API's JSON by hand
// and pages with the API's signed keyset cursor (bench/timeline.mjs checks the bodies equal the gateway's
// before it measures). Started by bench/timeline.mjs as its own process, so /proc shows its CPU:
//   BARE_TIMELINE_DB=postgres://…/funil_x_timeline BARE_GATEWAY_DB=postgres://…/funil_x_gateway node bench/timeline-bare.mjs
// It prints its port on stdout once it listens. Its key map is loaded at start: keys made later are unknown.
import { createHash } from "node:crypto";
import { decodeCursor, encodeCursor, useCursorKeys } from "@funil/rpc";
import Fastify from "fastify";
import postgres from "postgres";

// The stack's cursor keys (the bench passes them to both), so a cursor either side issues is the same.
useCursorKeys(process.env.CURSOR_KEYS?.split(","), () => {});

const sql = postgres(process.env.BARE_TIMELINE_DB, {
  max: 10,
  onnotice: () => {},
  connection: { application_name: "bench_timeline_bare" },
});

const keys = new Map();
{
  const gateway = postgres(process.env.BARE_GATEWAY_DB, { max: 1, onnotice: () => {} });
  for (const k of await gateway`select hash, workspace_id, scopes from api_keys where revoked_at is null`)
    keys.set(k.hash, { workspaceId: k.workspace_id, scopes: new Set(k.scopes) });
  await gateway.end();
}

const error = (code, message) => ({ error: { code, message } });

const interactionJson = (r) => ({
  id: r.id,
  kind: r.kind,
  channel: r.channel,
  direction: r.direction,
  actor: r.actor,
  userId: r.user_id,
  contactId: r.contact_id,
  opportunityId: r.opportunity_id,
  conversationId: r.conversation_id,
  conversationAssigneeUserId: r.assignee_user_id,
  channelInstanceId: r.channel_instance_id,
  senderPhone: r.sender_phone,
  createdAt: r.created_at.toISOString(),
  durationSec: r.duration_sec,
  status: r.status,
  preview: r.preview,
});

const app = Fastify({ logger: false });

// Only the filters the benchmark sends (contactId, userId, channel, limit, cursor), taken as given.
app.get("/api/v1/interactions", async (req, reply) => {
  const header = req.headers.authorization;
  const key = header?.startsWith("Bearer ")
    ? keys.get(createHash("sha256").update(header.slice(7)).digest("hex"))
    : undefined;
  if (!key) return reply.code(401).send(error("unauthorized", "missing or unknown key"));
  if (!key.scopes.has("interactions.read"))
    return reply.code(403).send(error("missing_scope", "needs interactions.read"));
  const { cursor, limit: asked, ...filters } = req.query;
  const ws = key.workspaceId;
  const bound = { ...filters, workspaceId: ws };
  const limit = Number(asked ?? 100);
  const after = cursor ? decodeCursor(cursor, "interactions", bound, ["timestamp", "string"]) : undefined;
  const channels = filters.channel?.split(",").map((c) => c.trim());
  const rows = await sql`
    select i.id, i.kind, i.channel, i.direction, i.actor, i.user_id, i.contact_id, i.opportunity_id,
      i.conversation_id, c.assignee_user_id, i.channel_instance_id, i.sender_phone, i.created_at,
      i.duration_sec, i.status, i.preview
    from interactions i
    left join conversations c on c.workspace_id = i.workspace_id and c.id = i.conversation_id
    where i.workspace_id = ${ws}
      ${filters.contactId ? sql`and i.contact_id = ${filters.contactId}` : sql``}
      ${filters.userId ? sql`and i.user_id = ${filters.userId}` : sql``}
      ${channels ? sql`and i.channel = any(${channels})` : sql``}
      ${after ? sql`and (i.created_at, i.id) < (${after[0]}, ${after[1]})` : sql``}
    order by i.created_at desc, i.id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    data: page.map(interactionJson),
    nextCursor:
      rows.length > limit
        ? encodeCursor("interactions", bound, [last.created_at.toISOString(), last.id])
        : null,
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
