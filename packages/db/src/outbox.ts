import { activeTraceparent } from "@funil/telemetry";
import { postgres, type Sql, type TransactionSql } from "./client.js";
import { newId } from "./ids.js";
import { type Actor, changedFields, type Origin, SYSTEM } from "./origin.js";
import { publishTraced } from "./tracing.js";

/** The envelope of every domain event (docs/api/events.md §Stream, subjects, envelope). */
export interface EventEnvelope<T = unknown> {
  id: string;
  type: string;
  workspaceId: string;
  occurredAt: string;
  data: T;
  // writeEvent always sets the next three; a reader can still meet events written before they existed.
  /** Who made the change (docs/api/events.md §Who made a change). */
  actor?: Actor;
  /** The gateway request that made it; null for the system's changes. */
  requestId?: string | null;
  /** The names of the fields the change set (a create) or changed (an update), never their values. */
  changes?: string[];
}

/** What a service hands writeEvent: the change, and who made it in which request (the system when unsaid). */
export interface EventInput<T = unknown> {
  type: string;
  workspaceId: string;
  occurredAt: Date;
  data: T;
  origin?: Origin | undefined;
  changes?: string[] | undefined;
}

/**
 * Writes a domain event in the caller's transaction: it leaves the service
 * if and only if the change commits.
 */
export async function writeEvent<T>(
  tx: TransactionSql,
  subjectOf: (type: string) => string,
  event: EventInput<T>,
): Promise<EventEnvelope<T>> {
  const origin = event.origin ?? SYSTEM;
  const envelope: EventEnvelope<T> = {
    id: newId("evt", event.occurredAt.getTime()),
    type: event.type,
    workspaceId: event.workspaceId,
    occurredAt: event.occurredAt.toISOString(),
    data: event.data,
    actor: origin.actor,
    requestId: origin.requestId,
    changes: event.changes ?? [],
  };
  // The active span's context when the change is sampled, else the one its request came with.
  const traceparent = activeTraceparent() ?? origin.traceparent;
  await writeMessage(tx, [
    { id: envelope.id, subject: subjectOf(event.type), payload: envelope, traceparent },
  ]);
  return envelope;
}

/**
 * Writes messages for the relay in the caller's transaction: each is
 * published if and only if the transaction commits, with its id as the
 * JetStream message id. Domain events go through writeEvent; other work
 * (a webhook delivery's job) comes here directly. A message goes with its own
 * `traceparent` when it has one (work gathered from several traces), else with
 * the active context's.
 */
export async function writeMessage(
  tx: TransactionSql,
  messages: Array<{ id: string; subject: string; payload: unknown; traceparent?: string | undefined }>,
): Promise<void> {
  if (messages.length === 0) return;
  const active = activeTraceparent();
  const traceparents = messages.map((m) => m.traceparent ?? active ?? null);
  if (traceparents.every((t) => t === null))
    await tx`
      insert into outbox (id, subject, envelope)
      select id, subject, envelope::jsonb
      from unnest(${messages.map((m) => m.id)}::text[], ${messages.map((m) => m.subject)}::text[],
        ${messages.map((m) => JSON.stringify(m.payload))}::text[]) as m(id, subject, envelope)`;
  else
    await tx`
      insert into outbox (id, subject, envelope, traceparent)
      select id, subject, envelope::jsonb, traceparent
      from unnest(${messages.map((m) => m.id)}::text[], ${messages.map((m) => m.subject)}::text[],
        ${messages.map((m) => JSON.stringify(m.payload))}::text[], ${traceparents}::text[])
        as m(id, subject, envelope, traceparent)`;
  await tx`select pg_notify('outbox', '')`;
}

/** Publishes one message; `traceparent`: the trace context of the write that made it, as a header. */
export type Publish = (
  subject: string,
  payload: Uint8Array,
  messageId: string,
  traceparent?: string,
) => Promise<void>;

interface RelayOptions {
  /** The service's pool: the relay's one session is opened with its settings. */
  sql: Sql;
  /** The session's application_name (who holds what in pg_stat_activity). */
  applicationName?: string;
  publish: Publish;
  /** The first failure of a streak (an outage is one line, not one per retry). */
  onError?: (err: unknown) => void;
  /** The first success after a streak of failures. */
  onRecover?: (info: { failures: number; downMs: number }) => void;
  /** Polling interval when no notification arrives. */
  intervalMs?: number;
  /** First retry delay after a failed drain, doubled per failure up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  batch?: number;
}

/**
 * The advisory lock (per database: PostgreSQL scopes these to the database) whose holder is the one relay
 * that publishes. Any constant works as long as nothing else in these databases takes it.
 */
const RELAY_LOCK = 7_277_101_843_010_321n;

/**
 * Publishes outbox rows in commit order and deletes them once the bus
 * acknowledged them; the event id is the JetStream message id, so a crash
 * after publishing and before deleting republishes a duplicate that the stream
 * drops.
 *
 * Copies of a service share one outbox, and only one relay publishes at a
 * time: the holder of an advisory lock taken on a connection of its own. The
 * others try the lock at each poll (no transaction open) and one of them takes
 * over within a poll of the holder's connection ending: a stop, a crash or a
 * kill ends the process's session, and PostgreSQL releases its locks with it.
 * The lock is tried, never waited for: PostgreSQL does not notice that the
 * client of a statement waiting on a lock has gone, so every copy stopped or
 * killed while waiting would leave a backend (a connection) behind it until the
 * lock came free. Two relays claiming batches side by side would each send their batch at
 * once, so a deal's `opportunity.won` could reach the stream before its
 * `opportunity.created`; one publisher sending rows in `seq` order keeps each
 * entity's events in commit order (two writes of one entity are serialized by
 * its row lock, so the later one's row gets the higher seq). No transaction is
 * held while publishing: the rows are read, sent, then deleted.
 *
 * A failed drain is retried after 100 ms, doubling up to 500 ms, and wake()
 * (called when the bus reconnects) retries at once: events flow again within
 * a second of the bus coming back, not after the client's default timeouts.
 */
export function startOutboxRelay({
  sql,
  applicationName,
  publish,
  onError,
  onRecover,
  intervalMs = 500,
  retryMs = 100,
  maxRetryMs = 500,
  batch = 200,
}: RelayOptions) {
  let stopped = false;
  let wake: (() => void) | undefined;
  // A notification that lands while a drain runs must not be lost: it makes the loop go round again.
  let notified = false;
  // wake() during a drain: whatever that drain's outcome, the next one starts at once.
  let woken = false;
  const lock = leaderSession(sql, applicationName, () => {
    notified = true;
    wake?.();
  });
  const { drain, stats } = serialDrains(drainBatch(lock, publish, batch), {
    onError,
    onRecover,
    stopped: () => stopped,
  });

  async function loop() {
    while (!stopped) {
      notified = false;
      woken = false;
      let failed = false;
      try {
        while (!stopped && (await drain()) === batch) {}
      } catch {
        failed = true;
      }
      if (stopped) break;
      // After a failure wait (with backoff) even if writes keep notifying: no hot loop on a bus outage. A
      // relay standing by only tries the lock at each interval, whatever the writes notify.
      if (lock.leading() && ((notified && !failed) || woken)) continue;
      const delay = failed ? Math.min(maxRetryMs, retryMs * 2 ** (stats.streak - 1)) : intervalMs;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
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
    /** Resolves once this relay holds the lock and listens for notifications (tests). */
    ready: lock.listening,
    /** Publishes everything pending now, once this relay holds the lock (tests). */
    flush: async () => {
      for (;;) {
        const n = await drain();
        if (lock.leading() && n === 0) return;
        if (!lock.leading()) await new Promise((r) => setTimeout(r, 50));
      }
    },
    /** Tries again now, without waiting out a retry delay (the bus is back). */
    wake: () => {
      woken = true;
      wake?.();
    },
    /**
     * Failed attempts since start, whether the relay is failing now, and whether it is the one that
     * publishes (the others stand by).
     */
    stats: () => ({
      publishFailures: stats.publishFailures,
      failing: stats.streak > 0,
      leading: lock.leading(),
    }),
    /**
     * Lets a publish in progress finish, publishes what is left when this relay holds the lock, then
     * ends the session, which hands the lock to a relay standing by.
     */
    stop: async () => {
      stopped = true;
      wake?.();
      // The drain in progress (a try of the lock, or a publish) finishes before the session ends: ending
      // it under a statement would reject that statement where nothing waits for it any more.
      await running;
      // What the last requests wrote goes out now rather than at the next start (a lone copy), unless
      // the bus is away: then it waits in the outbox for whichever relay runs next.
      if (lock.leading()) while ((await drain().catch(() => 0)) > 0) {}
      await lock.session.end({ timeout: 5 });
    },
  };
}

/**
 * The relay's one session. It holds the lock and, while it does, LISTENs: the lock lives as long as the
 * session (never released for being idle or old), and a session that ends (the server restarted, the
 * network cut) is seen at once, so that the relay stops publishing before it takes the lock again on a
 * new session, where it LISTENs again. Relays standing by do not LISTEN: a notification would only make
 * them try a lock they cannot take, so each copy costs one connection, not two (sql.listen() would open
 * one more).
 */
function leaderSession(sql: Sql, applicationName: string | undefined, onNotify: () => void) {
  let leading = false;
  let sessionsEnded = 0;
  let listened: () => void = () => {};
  const listening = new Promise<void>((resolve) => {
    listened = resolve;
  });
  const session = postgres({
    ...sql.options,
    max: 1,
    idle_timeout: null,
    max_lifetime: null,
    connection: {
      ...sql.options.connection,
      ...(applicationName ? { application_name: applicationName } : {}),
    },
    // postgres.js hands the notifications a connection receives to this option (its own sql.listen()
    // does the same on the connection it opens for them).
    onnotify: onNotify,
    onclose: () => {
      leading = false;
      sessionsEnded++;
    },
  } as unknown as postgres.Options<Record<string, never>>);

  return {
    session,
    listening,
    leading: () => leading,
    /**
     * Takes the lock when it is free; the holder LISTENs on the same session before it reads a row. Both
     * must have run on one session: a session that ended in between (the next statement reconnects)
     * leaves this relay standing by until its next poll.
     */
    async lead(): Promise<boolean> {
      const session0 = sessionsEnded;
      const [lock] = await session<{ taken: boolean }[]>`
        select pg_try_advisory_lock(${RELAY_LOCK.toString()}::bigint) as taken`;
      if (!lock?.taken) return false;
      await session`listen outbox`;
      if (sessionsEnded !== session0) return false;
      leading = true;
      listened();
      return true;
    },
  };
}
type LeaderSession = ReturnType<typeof leaderSession>;

/** One drain: once this relay leads, a batch read in `seq` order, published, then deleted. */
function drainBatch(lock: LeaderSession, publish: Publish, batch: number) {
  const encoder = new TextEncoder();
  return async (): Promise<number> => {
    if (!lock.leading() && !(await lock.lead())) return 0;
    // The envelope is published as PostgreSQL stored it, as text: read as jsonb, the driver parsed it
    // into objects (camel-casing every key on the way) only for it to be stringified again; a webhook
    // fan-out's jobs (64 ids each) made that about 16 KB of garbage per job (bench:webhooks).
    const rows = await lock.session<
      { seq: string; id: string; subject: string; envelope: string; traceparent: string | null }[]
    >`select seq, id, subject, envelope::text as envelope, traceparent from outbox order by seq limit ${batch}`;
    if (!lock.leading()) throw new Error("outbox relay: lost its session while reading");
    // Sent back to back on one connection, so the stream stores them in this order; a catch-up after an
    // outage costs one round trip per batch, not one per event.
    await Promise.all(
      rows.map((row) =>
        publishTraced(row.traceparent, row.subject, (traceparent) =>
          publish(row.subject, encoder.encode(row.envelope), row.id, traceparent),
        ),
      ),
    );
    if (rows.length > 0) {
      await lock.session`delete from outbox where seq = any(${rows.map((r) => r.seq)}::bigint[])`;
    }
    return rows.length;
  };
}

/**
 * Drains one at a time (flush() waits for the loop's drain), counting failures: an outage is one
 * onError when it starts and one onRecover when it ends, not one line per retry.
 */
function serialDrains(
  drainOnce: () => Promise<number>,
  opts: Pick<RelayOptions, "onError" | "onRecover"> & { stopped: () => boolean },
) {
  const stats = { publishFailures: 0, streak: 0, failingSince: 0 };
  let busy: Promise<unknown> = Promise.resolve();
  function drain(): Promise<number> {
    const run = busy.then(drainOnce);
    busy = run.catch(() => {});
    return run.then(
      (n) => {
        if (stats.streak > 0)
          opts.onRecover?.({ failures: stats.streak, downMs: Date.now() - stats.failingSince });
        stats.streak = 0;
        return n;
      },
      (err: unknown) => {
        // A drain cut by stop() closing the session is not a failure.
        if (opts.stopped()) throw err;
        stats.publishFailures++;
        if (stats.streak++ === 0) {
          stats.failingSince = Date.now();
          opts.onError?.(err);
        }
        throw err;
      },
    );
  }
  return { drain, stats };
}
export type OutboxRelay = ReturnType<typeof startOutboxRelay>;

/** What is waiting in the outbox: the number of rows and the age of the oldest (0 when empty). */
export async function outboxBacklog(sql: Sql): Promise<{ backlog: number; oldestAgeMs: number }> {
  const [row] = await sql<{ backlog: number; oldestAgeMs: number }[]>`
    select count(*)::int as backlog,
           coalesce(extract(epoch from now() - min(created_at)) * 1000, 0)::float8 as oldest_age_ms
    from outbox`;
  return row ?? { backlog: 0, oldestAgeMs: 0 };
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

/**
 * How a store writes the events of its changes: the row as it is after the change, who made it, and for
 * an update the row before it (the fields that changed are read from the two) or, when the store did not
 * read it, the names of the fields it changed (docs/api/events.md §Who made a change).
 */
export type EmitChange<Type extends string, Row> = (
  tx: TransactionSql,
  type: Type,
  row: Row,
  by: Origin,
  before?: Row | readonly string[],
) => Promise<void>;

/**
 * A store's EmitChange over a service's event writer: `data` is the resource as the API returns it
 * (`json`), `occurredAt` the time `at` reads from it, and `changes` the names of the fields the change set
 * or changed (docs/api/events.md §Who made a change).
 */
export function changeEmitter<Row extends { workspaceId: string }>(
  emit: (tx: TransactionSql, event: EventInput) => Promise<void>,
  json: (row: Row) => unknown,
  at: (row: Row) => Date,
): EmitChange<string, Row> {
  return (tx, type, row, by, before) => {
    const data = json(row);
    const prior = before === undefined || isNames(before) ? before : json(before);
    return emit(tx, {
      type,
      workspaceId: row.workspaceId,
      occurredAt: at(row),
      data,
      origin: by,
      changes: changedFields(data, prior),
    });
  };
}

const isNames = (v: unknown): v is readonly string[] => Array.isArray(v);
