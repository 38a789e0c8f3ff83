import { type EventEnvelope, inBatches, type Sql, type TransactionSql } from "@funil/db";

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
  await tx`
    insert into event_log (id, workspace_id, seq, type, occurred_at, body)
    select * from unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.workspaceId)}::text[],
      ${events.map((e) => e.seq)}::bigint[], ${events.map((e) => e.type)}::text[],
      ${events.map((e) => new Date(e.occurredAt).toISOString())}::timestamptz[], ${bodies}::text[])
    on conflict (id) do nothing`;
}

/** The event log's reads and its retention (docs/api/events.md §Catch-up: GET /events). */
export function eventLogStore(sql: Sql) {
  return {
    /** Where an event of the workspace stands in the stream; undefined when the log has no such event. */
    async seqOf(workspaceId: string, id: string): Promise<number | undefined> {
      const [row] = await sql<{ seq: string }[]>`
        select seq from event_log where id = ${id} and workspace_id = ${workspaceId}`;
      return row === undefined ? undefined : Number(row.seq);
    },

    /**
     * The workspace's events of `types` after stream position `after` and up to `upTo`, in stream order,
     * `take` at most.
     */
    async list(
      workspaceId: string,
      types: string[],
      after: number,
      upTo: number,
      take: number,
    ): Promise<LoggedEvent[]> {
      const rows = await sql<{ id: string; seq: string; body: string }[]>`
        select id, seq, body from event_log
        where workspace_id = ${workspaceId} and seq > ${after} and seq <= ${upTo}
          and type = any(${types}::text[])
        order by seq limit ${take}`;
      return rows.map((r) => ({ id: r.id, seq: Number(r.seq), body: r.body }));
    },

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
