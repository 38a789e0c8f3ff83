import type { Sql } from "./client.js";
import { deleteExpiredIdempotencyKeys } from "./idempotency.js";

/**
 * What a process keeps only for a while (docs/operations.md §Retention): each sweep deletes what is older
 * than its retention, in batches small enough that no statement holds many locks or runs long, and says
 * how many rows went.
 */
export interface Sweep {
  name: string;
  run: (sql: Sql, now: Date) => Promise<number>;
}

/** Rows deleted per statement by a batched sweep. */
const BATCH = 5000;

/**
 * Deletes, batch after batch, the rows `deleteBatch` picks (at most `batch` each) until a batch comes
 * back short: a backlog of a week of rows goes in one sweep without one statement that holds them all.
 */
export async function inBatches(
  deleteBatch: (limit: number) => Promise<number>,
  batch = BATCH,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await deleteBatch(batch);
    total += n;
    if (n < batch) return total;
  }
}

/**
 * The consumers' inbox rows (one per message a consumer handled): a row is needed only while its message
 * could come again, so `retentionMs` must be at least the longest time a stream keeps a message.
 */
export const inboxSweep = (retentionMs: number): Sweep => ({
  name: "inbox",
  run: (sql, now) =>
    inBatches(async (limit) => {
      const rows = await sql`
        delete from inbox where ctid = any(array(
          select ctid from inbox where processed_at < ${new Date(now.getTime() - retentionMs)} limit ${limit}))
        returning 1`;
      return rows.length;
    }),
});

/** Idempotency keys, remembered 24 h (docs/api/conventions.md §Idempotency-Key). */
export const idempotencySweep = (retentionMs?: number): Sweep => ({
  name: "idempotency_keys",
  run: (sql, now) => deleteExpiredIdempotencyKeys(sql, now, retentionMs),
});

/**
 * Runs every sweep at start and then every `intervalMs`, one after the other (one connection of the
 * pool at a time); a failed sweep is reported and tried again at the next round. stop() ends it.
 */
export function startSweeps(opts: {
  sql: Sql;
  now: () => Date;
  sweeps: Sweep[];
  intervalMs?: number;
  onSwept?: (name: string, rows: number) => void;
  onError?: (name: string, err: unknown) => void;
}) {
  let running: Promise<void> = Promise.resolve();
  const round = async () => {
    for (const sweep of opts.sweeps) {
      try {
        const rows = await sweep.run(opts.sql, opts.now());
        if (rows > 0) opts.onSwept?.(sweep.name, rows);
      } catch (err) {
        opts.onError?.(sweep.name, err);
      }
    }
  };
  let busy = false;
  // A round still running when the next is due is not queued behind it: the next tick sweeps again.
  const run = () => {
    if (busy) return;
    busy = true;
    running = round().finally(() => {
      busy = false;
    });
  };
  const timer = setInterval(run, opts.intervalMs ?? 10 * 60_000);
  timer.unref();
  run();
  return {
    /** Resolves when the round in progress (if any) has finished (tests). */
    settled: () => running,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
