import { create } from "@bufbuild/protobuf";
import { AttemptSchema, DeliverySchema, SubscriptionSchema } from "@funil/contracts";
import { wireOf } from "@funil/rpc";
import type { AttemptRecord } from "../store/attempts.js";
import type { DeliveryRecord } from "../store/deliveries.js";
import type { SubscriptionRecord } from "../subscriptions.js";

/** Records as the contracts' messages (a null is an unset optional field; the API shows null again). */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export const subscriptionWire = wireOf(SubscriptionSchema, (s: SubscriptionRecord) =>
  create(SubscriptionSchema, {
    id: s.id,
    url: s.url,
    events: s.events,
    description: absent(s.description),
    active: s.active,
    failingSince: s.failingSince?.toISOString(),
    disabledReason: absent(s.disabledReason),
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  }),
);

export const deliveryWire = wireOf(DeliverySchema, (d: DeliveryRecord) =>
  create(DeliverySchema, {
    id: d.id,
    subscriptionId: d.subscriptionId,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    responseStatus: absent(d.responseStatus),
    lastError: absent(d.lastError),
    lastAttemptAt: d.lastAttemptAt?.toISOString(),
    createdAt: d.createdAt.toISOString(),
  }),
);

export const attemptWire = wireOf(AttemptSchema, (a: AttemptRecord) =>
  create(AttemptSchema, {
    id: a.id,
    deliveryId: a.deliveryId,
    event: a.event,
    at: a.at.toISOString(),
    status: a.succeeded ? "succeeded" : "failed",
    responseStatus: absent(a.responseStatus),
    durationMs: a.durationMs,
    responseBody: absent(a.responseBody),
    error: absent(a.error),
  }),
);
