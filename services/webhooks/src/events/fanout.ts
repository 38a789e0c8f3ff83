import { consume, type NatsConnection } from "@funil/bus";
import type { Clock, Logger, Naming } from "@funil/config";
import type { EventEnvelope } from "@funil/db";
import { batcher } from "../batch.js";
import { InFlight } from "../limits.js";
import type { DeliveryStore } from "../store/deliveries.js";
import type { StreamEvent } from "../store/event-log.js";
import { fanOutSpan } from "./tracing.js";

/** Events being fanned out at once; their order does not matter. */
const PARALLEL = 256;
/** Events fanned out in one transaction, and how long the first of them waits for the others. */
const BATCH = 64;
const GATHER_MS = 5;
/** The fan-out's durable consumer of EVENTS, shared by the copies of the service. */
export const FANOUT_DURABLE = "webhooks-fanout";

/**
 * The durable consumer of EVENTS (docs/api/webhooks.md §What a receiver gets): every event goes to the
 * event log, and each subscribable one becomes one delivery per matching active subscription of its workspace,
 * queued on WEBHOOK_DELIVERIES through the outbox. Copies of the service
 * share the consumer; the store makes a redelivered event a no-op, so
 * events are fanned out side by side rather than one commit after another:
 * the events that arrive within GATHER_MS share one transaction (one per
 * event held up to 16 of the pool's connections and left the sender
 * waiting for one).
 */
export async function startFanOut(deps: {
  nc: NatsConnection;
  names: Naming;
  deliveries: DeliveryStore;
  clock: Clock;
  log: Logger;
}) {
  const slots = new InFlight(PARALLEL, 1, 0);
  const running = new Set<Promise<void>>();
  const onError = (err: unknown) => deps.log.warn({ err }, "webhook fan-out failed; the event comes back");
  const fanOut = batcher(
    async (items: Array<{ event: StreamEvent; traceparent: string | undefined }>) => {
      await deps.deliveries.fanOut(
        items.map((i) => i.event),
        deps.clock.now(),
        items.map((i) => i.traceparent),
      );
      return items.map(() => undefined);
    },
    BATCH,
    GATHER_MS,
  );
  const consumer = await consume(
    deps.nc,
    {
      stream: deps.names.stream("EVENTS"),
      durable: FANOUT_DURABLE,
      filterSubject: deps.names.subject("events.>"),
    },
    async (m) => {
      // Its stream sequence orders the event log (docs/api/events.md §Catch-up: GET /events).
      // Every event goes through, internal ones too: the log they are written to is what GET /audit lists
      // (docs/api/events.md §Audit: GET /audit); only subscribable types match a subscription.
      const event: StreamEvent = { ...m.json<EventEnvelope>(), seq: m.seq };
      const release = await slots.acquire(event.id);
      // Each event's jobs carry on its own trace, whichever batch it is written in.
      const span = fanOutSpan(event);
      const work = span
        .run(() => fanOut({ event, traceparent: span.traceparent }))
        .then(
          () => {
            span.end();
            m.ack();
          },
          (err) => {
            span.end(err);
            onError(err);
            m.nak(1_000);
          },
        )
        .finally(() => {
          release();
          running.delete(work);
        });
      running.add(work);
    },
    onError,
  );
  return {
    ...consumer,
    async stop() {
      await consumer.stop();
      await Promise.allSettled([...running]);
    },
  };
}
