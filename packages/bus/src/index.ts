import {
  AckPolicy,
  type JetStreamClient,
  type JsMsg,
  jetstream,
  jetstreamManager,
  StorageType,
} from "@nats-io/jetstream";
import { connect, type NatsConnection, nanos } from "@nats-io/transport-node";

export type { JetStreamClient, JsMsg, NatsConnection };

interface Naming {
  stream(name: string): string;
  subject(subject: string): string;
}

/**
 * Every stream of the system, defined once (DESIGN.md §Shape). File storage
 * everywhere; a two-minute duplicate window drops republished outbox rows.
 */
export const STREAMS = {
  EVENTS: { subjects: ["events.>"] },
  INGEST: { subjects: ["ingest.>"] },
  PLATFORM: { subjects: ["platform.>"] },
  WEBHOOK_DELIVERIES: { subjects: ["webhook.deliveries.>"] },
} as const;
export type StreamName = keyof typeof STREAMS;

export async function connectBus(url: string, name: string): Promise<NatsConnection> {
  return connect({ servers: url.split(","), name, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
}

/** Creates (or updates to the current definition) the streams, with the FUNIL_ENV naming. */
export async function ensureStreams(
  nc: NatsConnection,
  naming: Naming,
  names: StreamName[] = Object.keys(STREAMS) as StreamName[],
) {
  const jsm = await jetstreamManager(nc);
  for (const key of names) {
    const config = {
      name: naming.stream(key),
      subjects: STREAMS[key].subjects.map((s) => naming.subject(s)),
      storage: StorageType.File,
      duplicate_window: nanos(2 * 60_000),
    };
    try {
      await jsm.streams.info(config.name);
      await jsm.streams.update(config.name, config);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await jsm.streams.add(config);
      } catch (addErr) {
        // Another process created it between our info and add.
        if (!/already in use|exists/i.test(String(addErr))) throw addErr;
      }
    }
  }
}

function isNotFound(err: unknown): boolean {
  return /not found/i.test(String((err as Error)?.message ?? err));
}

export function publisher(nc: NatsConnection) {
  const js = jetstream(nc);
  /** Publishes with a message id, so a republish inside the duplicate window is dropped. */
  return async (subject: string, payload: Uint8Array, messageId: string) => {
    await js.publish(subject, payload, { msgID: messageId });
  };
}

export interface ConsumerSpec {
  stream: string;
  durable: string;
  /** One subject (wildcards allowed): NATS 2.9 has no filter_subjects. */
  filterSubject: string;
  maxDeliver?: number;
  ackWaitMs?: number;
}

/**
 * Durable pull consumer with explicit acks; copies of a service share it.
 * The loop restarts itself after an error and stops with the returned stop().
 */
export async function consume(
  nc: NatsConnection,
  spec: ConsumerSpec,
  handle: (msg: JsMsg) => Promise<void>,
  onError: (err: unknown) => void,
) {
  const jsm = await jetstreamManager(nc);
  const config = {
    durable_name: spec.durable,
    ack_policy: AckPolicy.Explicit,
    filter_subject: spec.filterSubject,
    max_deliver: spec.maxDeliver ?? -1,
    ack_wait: nanos(spec.ackWaitMs ?? 30_000),
  };
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
    await jsm.consumers.update(spec.stream, spec.durable, config);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.consumers.add(spec.stream, config);
  }
  const js = jetstream(nc);
  let stopped = false;
  let current: { stop(): void } | undefined;
  const loop = (async () => {
    while (!stopped) {
      try {
        const consumer = await js.consumers.get(spec.stream, spec.durable);
        const messages = await consumer.consume({ max_messages: 64 });
        current = messages;
        for await (const m of messages) {
          try {
            await handle(m);
          } catch (err) {
            onError(err);
            m.nak(1000);
          }
        }
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
  };
}
