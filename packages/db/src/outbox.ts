import type { Sql, TransactionSql } from "./client.js";
import { newId } from "./ids.js";

/** The envelope of every domain event (API.md §12). */
export interface EventEnvelope<T = unknown> {
  id: string;
  type: string;
  workspaceId: string;
  occurredAt: string;
  data: T;
}

/**
 * Writes a domain event in the caller's transaction: it leaves the service
 * if and only if the change commits.
 */
export async function writeEvent<T>(
  tx: TransactionSql,
  subjectOf: (type: string) => string,
  event: { type: string; workspaceId: string; occurredAt: Date; data: T },
): Promise<EventEnvelope<T>> {
  const envelope: EventEnvelope<T> = {
    id: newId("evt", event.occurredAt.getTime()),
    type: event.type,
    workspaceId: event.workspaceId,
    occurredAt: event.occurredAt.toISOString(),
    data: event.data,
  };
  await tx`insert into outbox (id, subject, envelope) values (${envelope.id}, ${subjectOf(event.type)}, ${tx.json(envelope as never)})`;
  await tx`select pg_notify('outbox', '')`;
  return envelope;
}

export type Publish = (subject: string, payload: Uint8Array, messageId: string) => Promise<void>;

interface RelayOptions {
  sql: Sql;
  publish: Publish;
  onError?: (err: unknown) => void;
  /** Polling interval when no notification arrives. */
  intervalMs?: number;
  batch?: number;
}

/**
 * Publishes outbox rows in order and deletes them once the bus acknowledged
 * them. Rows are claimed with FOR UPDATE SKIP LOCKED so several copies of a
 * service share the work; the event id is the JetStream message id, so a
 * crash after publishing and before deleting republishes a duplicate that the
 * stream drops.
 */
export function startOutboxRelay({ sql, publish, onError, intervalMs = 500, batch = 200 }: RelayOptions) {
  const encoder = new TextEncoder();
  let stopped = false;
  let wake: (() => void) | undefined;
  // A notification that lands while a drain runs must not be lost: it makes the loop go round again.
  let notified = false;
  const listening = sql
    .listen("outbox", () => {
      notified = true;
      wake?.();
    })
    .catch((err) => onError?.(err));

  async function drainOnce(): Promise<number> {
    return sql.begin(async (tx) => {
      const rows = await tx<{ seq: string; id: string; subject: string; envelope: unknown }[]>`
        select seq, id, subject, envelope from outbox order by seq limit ${batch} for update skip locked`;
      for (const row of rows) {
        await publish(row.subject, encoder.encode(JSON.stringify(row.envelope)), row.id);
      }
      if (rows.length > 0) {
        await tx`delete from outbox where seq = any(${rows.map((r) => r.seq)}::bigint[])`;
      }
      return rows.length;
    });
  }

  // One drain at a time per relay: flush() waits for the loop's drain instead of skipping its locked rows.
  let busy: Promise<unknown> = Promise.resolve();
  function drain(): Promise<number> {
    const run = busy.then(drainOnce);
    busy = run.catch(() => {});
    return run;
  }

  async function loop() {
    while (!stopped) {
      notified = false;
      let failed = false;
      try {
        while (!stopped && (await drain()) === batch) {}
      } catch (err) {
        failed = true;
        onError?.(err);
      }
      if (stopped) break;
      // After a failure wait out the interval even if writes keep notifying: no hot loop on a bus outage.
      if (notified && !failed) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  }
  const running = loop();

  return {
    /** Resolves once the relay listens for notifications (until then it only polls). */
    ready: listening.then(() => {}),
    /** Publishes everything pending now (tests and shutdown). */
    flush: async () => {
      while ((await drain()) > 0) {}
    },
    stop: async () => {
      stopped = true;
      wake?.();
      await running;
      const l = await listening;
      if (l) await l.unlisten().catch(() => {});
    },
  };
}

/**
 * Records that `consumer` processed `messageId`, in the caller's transaction.
 * Returns false when it was already processed: the caller skips the work.
 */
export async function firstDelivery(
  tx: TransactionSql,
  consumer: string,
  messageId: string,
): Promise<boolean> {
  const rows = await tx`
    insert into inbox (consumer, message_id) values (${consumer}, ${messageId})
    on conflict do nothing returning 1`;
  return rows.length === 1;
}
