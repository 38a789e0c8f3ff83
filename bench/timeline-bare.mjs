// The bare baseline of the timeline bench (docs/benchmarks.md): what the hardware gives for GET /interactions
// without the architecture (no gateway, no Connect hop, no protobuf). A minimal Fastify app that checks the
// bearer key's SHA-256 against an in-memory map, runs the timeline's own list (services/timeline's store:
// the same SQL, `postgres` driver and options) on the timeline's database, pages it with the same keyset
// cursor, and writes the JSON the gateway writes (bench/timeline.mjs checks the bodies are equal before
// it measures). Started by bench/timeline.mjs as its own process, so /proc shows its CPU:
//   BARE_TIMELINE_DB=postgres://…/funil_x_timeline BARE_GATEWAY_DB=postgres://…/funil_x_gateway node bench/timeline-bare.mjs
// It prints its port on stdout once it listens. Its key map is loaded at start: keys made later are unknown.
import { createHash } from "node:crypto";
import { keysetPage } from "@funil/rpc";
import Fastify from "fastify";
import postgres from "postgres";
import { interactionStore } from "../services/timeline/dist/store/interactions.js";

// The services' pool size and options (packages/db openDatabase, DATABASE_POOL_MAX default 3).
const sql = postgres(process.env.BARE_TIMELINE_DB, {
  max: Number(process.env.DATABASE_POOL_MAX || 3),
  transform: postgres.camel,
  prepare: true,
  onnotice: () => {},
  connection: { application_name: "bench_timeline_bare" },
});
const store = interactionStore(sql);

const keys = new Map();
{
  const gateway = postgres(process.env.BARE_GATEWAY_DB, { max: 1, onnotice: () => {} });
  for (const k of await gateway`select hash, workspace_id, scopes from api_keys where revoked_at is null`)
    keys.set(k.hash, { workspaceId: k.workspace_id, scopes: new Set(k.scopes) });
  await gateway.end();
}

const error = (code, message) => ({ error: { code, message } });

/** An interaction as the public API shows it (every field, null when unset). */
const interactionJson = (r) => ({
  id: r.id,
  kind: r.kind,
  channel: r.channel,
  direction: r.direction,
  actor: r.actor,
  userId: r.userId,
  contactId: r.contactId,
  opportunityId: r.opportunityId,
  conversationId: r.conversationId,
  conversationAssigneeUserId: r.conversationAssigneeUserId,
  channelInstanceId: r.channelInstanceId,
  senderPhone: r.senderPhone,
  createdAt: r.createdAt.toISOString(),
  durationSec: r.durationSec,
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
  const { cursor, limit, ...bound } = req.query;
  const { rows, nextCursor } = await keysetPage({
    list: "interactions",
    workspaceId: key.workspaceId,
    filters: bound,
    cursor,
    limit: Number(limit ?? 0),
    defaultLimit: 100,
    sortKey: (r) => r.createdAt,
    fetch: (take, after) =>
      store.list(
        key.workspaceId,
        {
          contactId: bound.contactId,
          userId: bound.userId,
          channels: bound.channel?.split(",").map((c) => c.trim()),
        },
        take,
        after,
      ),
  });
  return { data: rows.map(interactionJson), nextCursor: nextCursor ?? null };
});

const address = await app.listen({ port: 0, host: "127.0.0.1" });
console.log(new URL(address).port);
process.once("SIGTERM", () =>
  app
    .close()
    .then(() => sql.end({ timeout: 2 }))
    .then(() => process.exit(0)),
);
