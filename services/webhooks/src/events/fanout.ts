import { consume, type NatsConnection } from "@funil/bus";
import type { Clock, Logger, Naming } from "@funil/config";
import type { EventEnvelope } from "@funil/db";
import { WEBHOOK_EVENTS } from "@funil/schemas";
import type { DeliveryStore } from "../store/deliveries.js";

/**
 * The durable consumer of EVENTS (issue 11 §2): each subscribable event
 * becomes one delivery per matching active subscription of its workspace,
 * queued on WEBHOOK_DELIVERIES through the outbox. Copies of the service
 * share the consumer; the store makes a redelivered event a no-op.
 */
export function startFanOut(deps: {
  nc: NatsConnection;
  names: Naming;
  deliveries: DeliveryStore;
  clock: Clock;
  log: Logger;
}) {
  return consume(
    deps.nc,
    {
      stream: deps.names.stream("EVENTS"),
      durable: "webhooks-fanout",
      filterSubject: deps.names.subject("events.>"),
    },
    async (m) => {
      const event = m.json<EventEnvelope>();
      if (event.type in WEBHOOK_EVENTS) await deps.deliveries.fanOut(event.id, event, deps.clock.now());
      m.ack();
    },
    (err) => deps.log.warn({ err }, "webhook fan-out failed; the event comes back"),
  );
}
