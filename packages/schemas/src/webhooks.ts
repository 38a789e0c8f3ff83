import { z } from "zod";
import { cursor, limit, ref, text, timestamp } from "./common.js";
import { parseTimestamp } from "./time.js";

/** The subscribable events and the read scope each needs besides webhooks.manage (docs/api/webhooks.md §Subscribable events). */
export const WEBHOOK_EVENTS = {
  "contact.created": "contacts.read",
  "contact.updated": "contacts.read",
  "opportunity.created": "opportunities.read",
  "opportunity.stage_changed": "opportunities.read",
  "opportunity.won": "opportunities.read",
  "opportunity.lost": "opportunities.read",
  "meeting.booked": "calendars.read",
  "meeting.rescheduled": "calendars.read",
  "meeting.canceled": "calendars.read",
  "meeting.outcome": "calendars.read",
} as const;
export type WebhookEvent = keyof typeof WEBHOOK_EVENTS;
const eventNames = Object.keys(WEBHOOK_EVENTS) as [WebhookEvent, ...WebhookEvent[]];

export const webhookEvent = z.enum(eventNames, {
  message: `unknown event type; the subscribable ones are ${eventNames.join(", ")}`,
});
export const deliveryStatus = z.enum(["pending", "delivered", "dead"]);
export const disabledReason = z.enum(["scope_revoked", "circuit_breaker"]);

/**
 * An absolute http(s) URL. Whether http is allowed and where the host may
 * point (docs/api/webhooks.md §Subscription: no loopback, private, link-local or metadata address)
 * is the webhooks service's judgement: it depends on its settings and on DNS.
 */
export const webhookUrl = text(2048)
  .refine((v) => URL.canParse(v), "url must be an absolute URL")
  .refine((v) => !URL.canParse(v) || /^https?:$/.test(new URL(v).protocol), "url must be http or https");

const events = z
  .array(webhookEvent)
  .min(1, "subscribe to at least one event")
  .max(eventNames.length * 2, "too many events");

export const createWebhookBody = z
  .strictObject({
    url: webhookUrl,
    events,
    description: text(500).nullable().optional(),
  })
  .meta({ id: "WebhookCreate" });

export const patchWebhookBody = z
  .strictObject({
    url: webhookUrl.optional(),
    events: events.optional(),
    description: text(500).nullable().optional(),
    active: z.boolean().optional(),
  })
  .meta({ id: "WebhookPatch" });

/** A delivery of a subscription, in a path (`/webhooks/{id}/deliveries/{deliveryId}/…`). */
export const deliveryParams = z.strictObject({ id: ref, deliveryId: ref });

/** Dead deliveries one recover puts back at most; the rest is said, with where the next call starts. */
export const RECOVER_LIMIT = 10_000;

/** POST /webhooks/{id}/recover: the dead deliveries created within [since, until) (until: now). */
export const recoverBody = z
  .strictObject({ since: timestamp, until: timestamp.optional() })
  .refine(
    (b) =>
      b.until === undefined ||
      (parseTimestamp(b.since)?.getTime() ?? 0) < (parseTimestamp(b.until)?.getTime() ?? 0),
    { message: "since must be before until", path: ["until"] },
  )
  .meta({ id: "WebhookRecover" });

/** An attempt's outcome in the attempt log: a 2xx, or anything else. */
export const attemptStatus = z.enum(["succeeded", "failed"]);

/** GET /webhooks/{id}/attempts: newest first; from inclusive, to exclusive. */
export const listAttemptsQuery = z.strictObject({
  status: attemptStatus.optional(),
  event: webhookEvent.optional(),
  from: timestamp.optional(),
  to: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(100),
});

/** GET /events?type=: one event type, or a comma-separated list of them. */
const eventTypeList = z
  .string()
  .min(1, "must not be empty")
  .max(500, "at most 500 characters")
  .refine(
    (v) => v.split(",").every((t) => Object.hasOwn(WEBHOOK_EVENTS, t.trim())),
    `a comma-separated list of ${eventNames.join(", ")}`,
  );

/** The event types of GET /events?type= (validated by listEventsQuery), once each, in the order given. */
export const eventTypesOf = (type: string) => [...new Set(type.split(",").map((t) => t.trim()))];

/** GET /events: a workspace's events after the one the client processed last, in the stream's order. */
export const listEventsQuery = z.strictObject({
  after: ref.optional(),
  type: eventTypeList.optional(),
  cursor: cursor.optional(),
  limit: limit(100),
});
