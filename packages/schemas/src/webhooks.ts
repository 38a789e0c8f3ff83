import { z } from "zod";
import { text } from "./common.js";

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
