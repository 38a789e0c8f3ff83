import {
  type AuditEntry,
  AuditEntrySchema,
  type ListAuditEntriesRequest,
  ListAuditEntriesRequestSchema,
} from "@funil/contracts";
import { actorFromText } from "@funil/db";
import { invalid } from "@funil/errors";
import { apiJsonArray, decodeCursor, encodeCursor, pageJsonOnce, plainOf } from "@funil/rpc";
import { check, instant, listAuditQuery } from "@funil/schemas";
import type { AuditRow } from "../store/event-log.js";
import type { EventLogDeps } from "./events.js";

/**
 * A change as the API shows it: who, when, which entity, which fields; never the values. Written as a
 * literal with its $typeName, not through create(), whose walk of the descriptor showed in the profile of
 * a page of 100 (as crm's list pages: services/crm/src/rpc/wire.ts).
 */
function auditEntry(r: AuditRow): AuditEntry {
  const actor = actorFromText(r.actor);
  return {
    $typeName: "funil.webhooks.v1.AuditEntry",
    id: r.id,
    type: r.type,
    entity: r.entityType,
    entityId: r.entityId ?? "",
    actor: {
      $typeName: "funil.webhooks.v1.Actor",
      type: actor.type,
      id: actor.type === "key" ? actor.id : undefined,
    },
    requestId: r.requestId ?? undefined,
    changes: r.changes ?? [],
    occurredAt: r.occurredAt.toISOString(),
  };
}

/**
 * GET /audit (docs/api/events.md §Audit: GET /audit): the workspace's changes in the order of EVENTS, up to
 * where the log is complete, as GET /events reads it. Another workspace's entity id lists nothing, as an id
 * that never existed does.
 */
export function listAuditEntries(deps: EventLogDeps) {
  return async (req: ListAuditEntriesRequest) => {
    const { cursor, limit, ...bound } = check(
      listAuditQuery,
      plainOf(ListAuditEntriesRequestSchema, req, ["workspaceId", "apiJson"]),
      "query",
    );
    if (bound.id !== undefined && bound.entity === undefined)
      throw invalid([{ path: "query.id", message: "id needs entity" }], "query");
    const filters = { ...bound, workspaceId: req.workspaceId };
    const from = cursor ? (decodeCursor(cursor, "audit", filters, ["number"])[0] as number) : 0;
    const upTo = await deps.loggedUpTo();
    const rows = await deps.events.audit(
      req.workspaceId,
      { entity: bound.entity, id: bound.id, since: instant(bound.after) },
      from,
      upTo,
      limit + 1,
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const nextCursor = rows.length > limit && last ? encodeCursor("audit", filters, [last.seq]) : undefined;
    // Asked by the gateway: the page as the API's JSON, which it sends on without decoding or mapping it.
    if (req.apiJson)
      return {
        data: [],
        nextCursor,
        dataJson: pageJsonOnce(rows, () => apiJsonArray(AuditEntrySchema, page.map(auditEntry))),
      };
    return { data: page.map(auditEntry), nextCursor };
  };
}
