import { activeTraceparent } from "@funil/telemetry";
import {
  AckPolicy,
  type JetStreamClient,
  type JsMsg,
  jetstream,
  jetstreamManager,
  StorageType,
} from "@nats-io/jetstream";
import { connect, headers, type NatsConnection, nanos } from "@nats-io/transport-node";
import { traceBatches, traceMessages } from "./tracing.js";

export { messageContext, withMessageContext } from "./tracing.js";

export type { JetStreamClient, JsMsg, NatsConnection };

interface Naming {
  stream(name: string): string;
  subject(subject: string): string;
}

/**
 * Every stream of the system, defined once (docs/architecture.md §The shape). File storage
 * everywhere; a two-minute duplicate window drops republished outbox rows.
 */
export const STREAMS = {
  EVENTS: { subjects: ["events.>"] },
  INGEST: { subjects: ["ingest.>"] },
  PLATFORM: { subjects: ["platform.>"] },
  WEBHOOK_DELIVERIES: { subjects: ["webhook.deliveries.>"] },
} as const;
export type StreamName = keyof typeof STREAMS;

/** What a durable consumer gets when its spec leaves it unset: JetStream's own defaults are not relied on. */
export const CONSUMER_DEFAULTS = { ackWaitMs: 30_000, maxDeliver: -1 } as const;

/**
 * Every durable consumer of the system, by durable name: the stream it reads and its filter subject
 * (both without the FUNIL_ENV naming), and the settings it sets beyond CONSUMER_DEFAULTS. The timeline
 * and learning services start theirs from here (consumerSpec), the AsyncAPI document describes them
 * from here. The webhooks service writes its two specs itself, the sender's ack wait from
 * WEBHOOK_TIMEOUT_MS: tests/e2e/asyncapi.test.ts holds them to the consumers NATS has.
 */
export const CONSUMERS = {
  "timeline-inbox": {
    service: "timeline",
    description: "inbox messages and conversation reassignments, stored on the timeline",
    stream: "INGEST",
    filterSubject: "ingest.inbox.>",
  },
  "timeline-calls": {
    service: "timeline",
    description: "calls, stored on the timeline",
    stream: "INGEST",
    filterSubject: "ingest.call",
  },
  "timeline-emails": {
    service: "timeline",
    description: "e-mails, stored on the timeline",
    stream: "INGEST",
    filterSubject: "ingest.email",
  },
  "timeline-events": {
    service: "timeline",
    description: "every domain event: the activity ledger, and notes on the timeline",
    stream: "EVENTS",
    filterSubject: "events.>",
  },
  "learning-platform": {
    service: "learning",
    description: "the e-learning platform's data (its own dead letters are acknowledged unread)",
    stream: "PLATFORM",
    filterSubject: "platform.>",
    // A message takes milliseconds to apply: the ones a killed copy had taken come back after 5 s, not 30.
    ackWaitMs: 5000,
  },
  "webhooks-fanout": {
    service: "webhooks",
    description:
      "every domain event: one delivery per matching subscription of a subscribable type, the rest acknowledged",
    stream: "EVENTS",
    filterSubject: "events.>",
  },
  "webhooks-erasures": {
    service: "webhooks",
    description:
      "contact.erased: the stored bodies (deliveries, the event log) that carry the contact, redacted",
    stream: "EVENTS",
    filterSubject: "events.contact.erased",
  },
  "scheduling-erasures": {
    service: "scheduling",
    description: "contact.erased: the contact's name and free texts on its meetings, erased",
    stream: "EVENTS",
    filterSubject: "events.contact.erased",
  },
  "webhooks-sender": {
    service: "webhooks",
    description:
      "the delivery jobs: signed POSTs to receivers. Ack wait WEBHOOK_TIMEOUT_MS + 10 s (20 s by default), so that a job outlives its lease",
    stream: "WEBHOOK_DELIVERIES",
    filterSubject: "webhook.deliveries.>",
    ackWaitMs: 20_000,
    // Every job waiting for a retry is unacknowledged (nak with a delay).
    maxAckPending: 1_000_000,
  },
} as const satisfies Record<
  string,
  {
    service: string;
    description: string;
    stream: StreamName;
    filterSubject: string;
    ackWaitMs?: number;
    maxAckPending?: number;
  }
>;
export type ConsumerName = keyof typeof CONSUMERS;

/** The ConsumerSpec of a consumer of CONSUMERS under the FUNIL_ENV naming, with the process's own options. */
export function consumerSpec(
  naming: Naming,
  durable: ConsumerName,
  options: Pick<ConsumerSpec, "concurrency"> = {},
): ConsumerSpec {
  const c: { stream: StreamName; filterSubject: string; ackWaitMs?: number; maxAckPending?: number } =
    CONSUMERS[durable];
  return {
    stream: naming.stream(c.stream),
    durable,
    filterSubject: naming.subject(c.filterSubject),
    ...(c.ackWaitMs === undefined ? {} : { ackWaitMs: c.ackWaitMs }),
    ...(c.maxAckPending === undefined ? {} : { maxAckPending: c.maxAckPending }),
    ...options,
  };
}

/**
 * Sized for recovery rather than the client's defaults: a restarted server is
 * found again within a quarter of a second of answering, and a publish that
 * was in flight when it went away gives up after half a second instead of
 * five (a JetStream ack takes milliseconds; a publish that timed out but was
 * stored is dropped as a duplicate when the relay sends it again).
 */
export const BUS_TIMING = { reconnectWaitMs: 250, reconnectJitterMs: 100, requestTimeoutMs: 500 } as const;

export async function connectBus(url: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: url.split(","),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: BUS_TIMING.reconnectWaitMs,
    reconnectJitter: BUS_TIMING.reconnectJitterMs,
    timeout: 5000,
    // Without this every request (each JetStream publish of an outbox relay) builds two Error objects
    // with stack traces up front, in case it fails, which showed in the webhooks process's profile.
    noAsyncTraces: true,
  });
}

/**
 * Follows the connection's state: one line when the server goes, one when it
 * is back (not one per failed attempt), and `onReconnect` so that work parked
 * behind the outage (an outbox relay) resumes at once.
 */
export function watchBus(
  nc: NatsConnection,
  opts: {
    log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
    onReconnect?: () => void;
  },
) {
  let connected = !nc.isClosed();
  let since = Date.now();
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" && connected) {
        connected = false;
        since = Date.now();
        opts.log.warn({ server: s.server }, "NATS connection lost; reconnecting");
      } else if (s.type === "reconnect") {
        opts.log.info({ server: s.server, downMs: Date.now() - since }, "NATS connection back");
        connected = true;
        since = Date.now();
        opts.onReconnect?.();
      }
    }
  })().catch(() => {});
  return {
    /** Whether the connection is up, and since when it has been in that state. */
    state: () => ({ connected: connected && !nc.isClosed(), since: new Date(since) }),
  };
}
export type BusWatch = ReturnType<typeof watchBus>;

/** How the streams are kept: the number of servers that store each (NATS_STREAM_REPLICAS), and for how long. */
export interface StreamOptions {
  /** Copies of every stream in a JetStream cluster (1..5; default 1, the only value a lone server takes). */
  replicas?: number;
  /**
   * How long each stream keeps a message (`max_age`), in ms: the `<STREAM>_MAX_AGE_MS` settings
   * (docs/operations.md §Retention). A stream not named keeps its messages until they are deleted.
   */
  maxAgeMs?: Partial<Record<StreamName, number>>;
}

/** The duplicate window drops an outbox row the relay publishes again; JetStream wants it within max_age. */
export const DUPLICATE_WINDOW_MS = 2 * 60_000;

/**
 * Creates the streams with the FUNIL_ENV naming, or updates them to the current definition: a stream
 * kept with another number of replicas is moved to the new number by the JetStream cluster itself
 * (JetStream adds or drops copies in place, messages kept). A number the server cannot keep (more than
 * one on a server that is not clustered, more than the cluster has) stops the start with a message that
 * says so, rather than a service running without its streams.
 */
export async function ensureStreams(
  nc: NatsConnection,
  naming: Naming,
  names: StreamName[] = Object.keys(STREAMS) as StreamName[],
  options: StreamOptions = {},
) {
  const jsm = await jetstreamManager(nc);
  const replicas = options.replicas ?? 1;
  for (const key of names) {
    const maxAgeMs = options.maxAgeMs?.[key] ?? 0;
    const config = {
      name: naming.stream(key),
      subjects: STREAMS[key].subjects.map((s) => naming.subject(s)),
      storage: StorageType.File,
      duplicate_window: nanos(maxAgeMs > 0 ? Math.min(DUPLICATE_WINDOW_MS, maxAgeMs) : DUPLICATE_WINDOW_MS),
      max_age: nanos(maxAgeMs),
      num_replicas: replicas,
    };
    await putStream(jsm, config).catch((err) => {
      throw replicasError(err, config.name, replicas);
    });
  }
}

type Jsm = Awaited<ReturnType<typeof jetstreamManager>>;

/** Creates the stream, or updates it to `config`. */
async function putStream(jsm: Jsm, config: Parameters<Jsm["streams"]["add"]>[0] & { name: string }) {
  try {
    const current = await jsm.streams.info(config.name);
    // A server that is not clustered takes an update to more replicas without a word and keeps one copy
    // (only a clustered stream's info names its cluster): refused here, before the update is stored.
    if ((config.num_replicas ?? 1) > 1 && !current.cluster) throw new Error("the server is not clustered");
    await jsm.streams.update(config.name, config);
    return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  try {
    await jsm.streams.add(config);
  } catch (err) {
    // Another process created it between our info and add.
    if (!/already in use|exists/i.test(String(err))) throw err;
  }
}

/** The server's refusal of a replica count, restated with the setting that asked for it. */
function replicasError(err: unknown, stream: string, replicas: number): unknown {
  const message = String((err as Error)?.message ?? err);
  if (replicas <= 1 || !/replica|clustered|insufficient resources|no suitable peers/i.test(message))
    return err;
  return new Error(
    `NATS_STREAM_REPLICAS=${replicas}: NATS cannot keep stream ${stream} on ${replicas} servers ` +
      `(${message}); a lone server keeps 1, a JetStream cluster at most as many as it has servers`,
    { cause: err },
  );
}

function isNotFound(err: unknown): boolean {
  return /not found/i.test(String((err as Error)?.message ?? err));
}

export function publisher(nc: NatsConnection) {
  const js = jetstream(nc);
  /**
   * Publishes with a message id, so a republish inside the duplicate window is dropped, and the trace
   * context of the write that made it (the W3C traceparent header), when it was traced: `traceparent`,
   * else the active context's (a dead letter sent while its message is handled).
   */
  return async (subject: string, payload: Uint8Array, messageId: string, given?: string) => {
    const traceparent = given ?? activeTraceparent();
    let h: ReturnType<typeof headers> | undefined;
    if (traceparent) {
      h = headers();
      h.set("traceparent", traceparent);
    }
    await js.publish(subject, payload, {
      msgID: messageId,
      timeout: BUS_TIMING.requestTimeoutMs,
      ...(h ? { headers: h } : {}),
    });
  };
}

export interface ConsumerSpec {
  stream: string;
  durable: string;
  /** One subject (wildcards allowed): NATS 2.9 has no filter_subjects. */
  filterSubject: string;
  maxDeliver?: number;
  ackWaitMs?: number;
  /**
   * Messages handed out and not yet acknowledged. A message nak'ed with a
   * delay (a scheduled retry) counts until it is acknowledged, so a consumer
   * that schedules work far ahead needs more than the server's default 1000.
   */
  maxAckPending?: number;
  /**
   * Messages handled at once by this process (default 1: in order). More is for handlers whose
   * effects commute (idempotent, order-free writes), where one at a time leaves the database idle.
   */
  concurrency?: number;
}

/** Creates the durable consumer, or updates it to the spec's definition. */
async function ensureConsumer(nc: NatsConnection, spec: ConsumerSpec) {
  const jsm = await jetstreamManager(nc);
  const config = {
    durable_name: spec.durable,
    ack_policy: AckPolicy.Explicit,
    filter_subject: spec.filterSubject,
    max_deliver: spec.maxDeliver ?? CONSUMER_DEFAULTS.maxDeliver,
    ack_wait: nanos(spec.ackWaitMs ?? CONSUMER_DEFAULTS.ackWaitMs),
    ...(spec.maxAckPending === undefined ? {} : { max_ack_pending: spec.maxAckPending }),
  };
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
    await jsm.consumers.update(spec.stream, spec.durable, config);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.consumers.add(spec.stream, config);
  }
  return jsm;
}

/**
 * What a pull loop does with the messages of one subscription to the consumer: take() each message as it
 * arrives (awaited when it answers a promise: the loop pulls on once there is room), then finish() when
 * the subscription ends, `stopping` when it ends because the loop is stopped.
 */
interface Drain {
  take(m: JsMsg): Promise<unknown> | undefined;
  finish(stopping: boolean): Promise<void>;
}

/**
 * The loop shared by consume() and consumeBatches(): it subscribes to the durable consumer, hands each
 * message to a fresh drain, and subscribes again half a second after an error. Once stop() is called it
 * pulls no more, naks what was pulled and not yet taken (so it goes to another copy's waiting pull at
 * once; one that the server hands to this copy's last pull request, which it keeps until it expires, comes
 * back after the ack wait), and waits for the drain to finish.
 */
async function pullLoop(
  nc: NatsConnection,
  spec: ConsumerSpec,
  maxMessages: number,
  open: (isStopping: () => boolean) => Drain,
  onError: (err: unknown) => void,
) {
  const jsm = await ensureConsumer(nc, spec);
  const js = jetstream(nc);
  let stopped = false;
  const isStopping = () => stopped;
  let current: { stop(): void } | undefined;
  // For /metrics: how often work came back, and how far behind the stream the last handled message was.
  let redeliveries = 0;
  let lagMs = 0;
  const loop = (async () => {
    while (!stopped) {
      try {
        const consumer = await js.consumers.get(spec.stream, spec.durable);
        const messages = await consumer.consume({ max_messages: maxMessages });
        current = messages;
        const drain = open(isStopping);
        for await (const m of messages) {
          if (stopped) {
            m.nak();
            continue;
          }
          if (m.info.redelivered) redeliveries++;
          lagMs = Math.max(0, Date.now() - Math.floor(m.info.timestampNanos / 1e6));
          const room = drain.take(m);
          if (room) await room;
        }
        await drain.finish(stopped);
      } catch (err) {
        if (!stopped) {
          onError(err);
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      current?.stop();
      await loop;
    },
    stats: () => statsOf(jsm, spec, redeliveries, lagMs),
  };
}

/**
 * Durable pull consumer with explicit acks; copies of a service share it. The handler runs in the trace
 * context the message carries (bus tracing.ts); a handler that throws has its message nak'ed for a retry
 * a second later. The loop restarts itself after an error and stops with the returned stop(): it lets
 * the messages being handled finish (pullLoop).
 */
export async function consume(
  nc: NatsConnection,
  spec: ConsumerSpec,
  handle: (msg: JsMsg) => Promise<void>,
  onError: (err: unknown) => void,
) {
  const concurrency = Math.max(1, spec.concurrency ?? 1);
  const run = traceMessages(spec.durable, handle);
  return pullLoop(
    nc,
    spec,
    Math.max(64, concurrency * 2),
    () => {
      const inFlight = new Set<Promise<void>>();
      return {
        take(m) {
          const done: Promise<void> = run(m)
            .catch((err) => {
              onError(err);
              m.nak(1000);
            })
            .finally(() => inFlight.delete(done));
          inFlight.add(done);
          return inFlight.size >= concurrency ? Promise.race(inFlight) : undefined;
        },
        finish: async () => {
          await Promise.all(inFlight);
        },
      };
    },
    onError,
  );
}

/**
 * Like consume(), but hands the handler the messages that have arrived
 * together, up to `batch` at once: a backlog is drained in batches of
 * `batch`, a lone message is handled on the next turn of the event loop
 * rather than waiting for company. `concurrency` batches run at once. The
 * handler acks each message it is done with; when it throws, every message
 * of the batch not yet acked is nak'ed for a retry a second later.
 */
export async function consumeBatches(
  nc: NatsConnection,
  spec: ConsumerSpec & { batch: number },
  handle: (msgs: JsMsg[]) => Promise<void>,
  onError: (err: unknown) => void,
) {
  const concurrency = Math.max(1, spec.concurrency ?? 1);
  const size = Math.max(1, spec.batch);
  const run = traceBatches(spec.durable, handle);
  // Enough on the way for every batch in flight and the next one to be filling.
  return pullLoop(
    nc,
    spec,
    size * (concurrency + 1),
    (isStopping) => batchDrain(run, size, concurrency, isStopping, onError),
    onError,
  );
}

/** consumeBatches()'s drain: gathers what arrives into batches of `size`, `concurrency` running at once. */
function batchDrain(
  run: (msgs: JsMsg[]) => Promise<void>,
  size: number,
  concurrency: number,
  isStopping: () => boolean,
  onError: (err: unknown) => void,
): Drain {
  const inFlight = new Set<Promise<void>>();
  const waiting: JsMsg[] = [];
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
  /** Starts a batch of what is waiting, unless `concurrency` are running (a finishing one calls again). */
  const flush = () => {
    scheduled = false;
    if (isStopping() || waiting.length === 0 || inFlight.size >= concurrency) return;
    const msgs = waiting.splice(0, size);
    const done: Promise<void> = run(msgs)
      .catch((err) => {
        onError(err);
        for (const m of msgs) m.nak(1000); // a no-op for those already acked
      })
      .finally(() => {
        inFlight.delete(done);
        if (waiting.length > 0) schedule();
      });
    inFlight.add(done);
  };
  /** Waits for room, then starts a batch. */
  const startOne = async () => {
    while (inFlight.size >= concurrency) await Promise.race(inFlight);
    flush();
  };
  return {
    take(m) {
      waiting.push(m);
      if (waiting.length >= size) return startOne();
      schedule();
      return undefined;
    },
    async finish(stopping) {
      // Stopping: the batches running finish; what waited for one goes back.
      if (stopping) for (const m of waiting.splice(0)) m.nak();
      while (waiting.length > 0) await startOne();
      await Promise.all(inFlight);
    },
  };
}

/** The consumer's counters; `pending` (not yet acknowledged) is undefined while NATS is away. */
async function statsOf(
  jsm: Awaited<ReturnType<typeof jetstreamManager>>,
  spec: ConsumerSpec,
  redeliveries: number,
  lagMs: number,
): Promise<ConsumerStats> {
  const info = await jsm.consumers.info(spec.stream, spec.durable).catch(() => undefined);
  return {
    name: spec.durable,
    redeliveries,
    lagMs,
    pending: info ? info.num_pending + info.num_ack_pending : undefined,
  };
}

export interface ConsumerStats {
  name: string;
  /** Messages handed to this process again after a failure or a timeout. */
  redeliveries: number;
  /** Age of the last message handled when it was handled. */
  lagMs: number;
  /** Messages the consumer still has to handle. */
  pending: number | undefined;
}
export type Consumer = Awaited<ReturnType<typeof consume>>;

/**
 * The stream sequence up to which a durable consumer has acknowledged every message (its ack floor):
 * whatever the consumer does with a message, it has done for each one at or below it, in whichever
 * order its copies handled them. Each call asks the server, and gives up after BUS_TIMING's request
 * timeout.
 */
export function acknowledgedUpTo(nc: NatsConnection, stream: string, durable: string) {
  let jsm: Promise<Jsm> | undefined;
  return async (): Promise<number> => {
    jsm ??= jetstreamManager(nc, { timeout: BUS_TIMING.requestTimeoutMs }).catch((err: unknown) => {
      jsm = undefined;
      throw err;
    });
    const info = await (await jsm).consumers.info(stream, durable);
    return info.ack_floor.stream_seq;
  };
}
