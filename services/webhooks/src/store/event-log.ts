import {
  actorText,
  coalescedByKey,
  type EventEnvelope,
  inBatches,
  pageLimit,
  type Sql,
  SYSTEM,
  type TransactionSql,
} from "@funil/db";

/** An event as it came off EVENTS: its envelope and its sequence in the stream. */
export interface StreamEvent extends EventEnvelope {
  seq: number;
}

/** A line of the event log: the event's id, its place in the stream, and the envelope as receivers get it. */
export interface LoggedEvent {
  id: string;
  seq: number;
  body: string;
}

/**
 * Writes events to the log in the fan-out's transaction, after its inbox has
 * kept only the events seen for the first time (docs/api/events.md §Catch-up:
 * GET /events). `bodies[i]` is the envelope of `events[i]` as a receiver gets it.
 */
export async function appendEvents(tx: TransactionSql, events: StreamEvent[], bodies: string[]) {
  if (events.length === 0) return;
  const audit = events.map(auditOf);
  // The changes go as one JSON array per event: unnest() of a text[][] would flatten them.
  await tx`
    insert into event_log (id, workspace_id, seq, type, occurred_at, body, entity_type, entity_id, actor,
      request_id, changes)
    select id, workspace_id, seq, type, occurred_at, body, entity_type, entity_id, actor, request_id,
      array(select jsonb_array_elements_text(changes::jsonb))
    from unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.workspaceId)}::text[],
      ${events.map((e) => e.seq)}::bigint[], ${events.map((e) => e.type)}::text[],
      ${events.map((e) => new Date(e.occurredAt).toISOString())}::timestamptz[], ${bodies}::text[],
      ${audit.map((a) => a.entityType)}::text[], ${audit.map((a) => a.entityId)}::text[],
      ${audit.map((a) => a.actor)}::text[], ${audit.map((a) => a.requestId)}::text[],
      ${audit.map((a) => a.changes)}::text[])
      as e(id, workspace_id, seq, type, occurred_at, body, entity_type, entity_id, actor, request_id, changes)
    on conflict (id) do nothing`;
}

/**
 * What GET /audit reads of an event (docs/api/events.md §Audit: GET /audit): its entity (the type's first
 * word, the data's id), who made it and in which request, and the names of the fields it changed. An
 * event written before envelopes carried an actor is the system's.
 */
function auditOf(e: StreamEvent) {
  const data = e.data as { id?: unknown } | null;
  return {
    entityType: e.type.slice(0, e.type.indexOf(".")),
    entityId: typeof data?.id === "string" ? data.id : null,
    actor: actorText(e.actor ?? SYSTEM.actor),
    requestId: e.requestId ?? null,
    changes: JSON.stringify(e.changes ?? []),
  };
}

/** A change as the event log keeps it for GET /audit. */
export interface AuditRow {
  id: string;
  seq: number;
  type: string;
  entityType: string;
  entityId: string | null;
  actor: string;
  requestId: string | null;
  changes: string[] | null;
  occurredAt: Date;
}

/** What a page of the catch-up reads (eventLogStore's list). */
interface EventQuery {
  workspaceId: string;
  types: string[];
  after: number;
  upTo: number;
  take: number;
}

/** What a page of the audit reads (eventLogStore's audit). */
interface AuditQuery {
  workspaceId: string;
  entity?: string | undefined;
  id?: string | undefined;
  since?: Date | undefined;
  after: number;
  upTo: number;
  take: number;
}

/**
 * The event log's reads and its retention (docs/api/events.md §Catch-up: GET /events). The lists keep
 * their page size a parameter (pageLimit's `planned` false): a generic plan cannot see how much of the
 * workspace the window (after, upTo] holds, guesses a sliver, and sorts the workspace's events instead of
 * walking them in seq order (store/explain.test.ts).
 */
export function eventLogStore(sql: Sql) {
  // The pages asked the same in one turn (the calls of one RPC batch) share one statement, and its rows:
  // their readers do not change them (coalescedByKey).
  const listPage = coalescedByKey(async (q: EventQuery): Promise<LoggedEvent[]> => {
    const ofType = q.types.length === 1 ? sql`type = ${q.types[0]!}` : sql`type = any(${q.types}::text[])`;
    const rows = await sql<{ id: string; seq: string; body: string }[]>`
      select id, seq, body from event_log
      where workspace_id = ${q.workspaceId} and seq > ${q.after} and seq <= ${q.upTo} and ${ofType}
      order by seq ${pageLimit(sql, q.take, false)}`;
    return rows.map((r) => ({ id: r.id, seq: Number(r.seq), body: r.body }));
  }, JSON.stringify);
  const auditPage = coalescedByKey(async (q: AuditQuery): Promise<AuditRow[]> => {
    const conditions = [
      sql`workspace_id = ${q.workspaceId}`,
      sql`seq > ${q.after}`,
      sql`seq <= ${q.upTo}`,
      sql`actor is not null`,
    ];
    if (q.entity !== undefined) conditions.push(sql`entity_type = ${q.entity}`);
    if (q.id !== undefined) conditions.push(sql`entity_id = ${q.id}`);
    if (q.since !== undefined) conditions.push(sql`occurred_at > ${q.since}`);
    const where = conditions.reduce((acc, c) => sql`${acc} and ${c}`);
    const rows = await sql<Array<Omit<AuditRow, "seq"> & { seq: string }>>`
      select id, seq, type, entity_type, entity_id, actor, request_id, changes, occurred_at
      from event_log where ${where} order by seq ${pageLimit(sql, q.take, false)}`;
    return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
  }, JSON.stringify);
  return {
    /** Where an event of the workspace stands in the stream; undefined when the log has no such event. */
    async seqOf(workspaceId: string, id: string): Promise<number | undefined> {
      const [row] = await sql<{ seq: string }[]>`
        select seq from event_log where id = ${id} and workspace_id = ${workspaceId}`;
      return row === undefined ? undefined : Number(row.seq);
    },

    /**
     * The workspace's events of `types` after stream position `after` and up to `upTo`, in stream order,
     * `take` at most. One type is an equality, which event_log_by_type answers in seq order; a list
     * (`= any`) is not in that index's order, and walks event_log_by_workspace (store/explain.test.ts).
     */
    list: (workspaceId: string, types: string[], after: number, upTo: number, take: number) =>
      listPage({ workspaceId, types, after, upTo, take }),

    /**
     * The workspace's changes after stream position `after`, in stream order, `take` at most (docs/api/
     * events.md §Audit: GET /audit): of one entity type, and of one entity, when asked; occurred after
     * `since`, when asked. Only events that carry their actor are changes listed here.
     */
    audit: (
      workspaceId: string,
      f: { entity?: string | undefined; id?: string | undefined; since?: Date | undefined },
      after: number,
      upTo: number,
      take: number,
    ) => auditPage({ workspaceId, ...f, after, upTo, take }),

    /** Events that occurred before `before` go, `batch` at a time. Answers how many went. */
    async sweep(before: Date, batch = 5000): Promise<number> {
      return inBatches(async (limit) => {
        const rows = await sql`
          delete from event_log where id = any(array(
            select id from event_log where occurred_at < ${before} limit ${limit}))`;
        return rows.count;
      }, batch);
    },
  };
}
export type EventLogStore = ReturnType<typeof eventLogStore>;
