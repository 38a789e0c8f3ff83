import { fail } from "@funil/errors";
import { WEBHOOK_EVENTS, type WebhookEvent } from "@funil/schemas";

/** A subscription as the store holds it (docs/api/webhooks.md §Subscription); secrets stay in the store. */
export interface SubscriptionRecord {
  id: string;
  workspaceId: string;
  keyId: string;
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  disabledReason: "scope_revoked" | "circuit_breaker" | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** How many times the row was updated (migration 00013): what a kept copy of it is checked against. */
  version: number;
}

export interface SubscriptionChanges {
  url?: string;
  events?: string[];
  description?: string | null;
  active?: boolean;
  /** The key that vouched for the events (a PATCH of events or a reactivation rebinds it). */
  keyId?: string;
}

/** The scopes a key needs to hold subscriptions to these events (docs/api/webhooks.md §Subscribable events). */
export function scopesFor(events: readonly string[]): string[] {
  const needed = new Set(["webhooks.manage"]);
  for (const e of events) needed.add(WEBHOOK_EVENTS[e as WebhookEvent]);
  return [...needed];
}

/** 403 missing_scope naming every scope the key lacks (docs/api/conventions.md §Errors, §Scopes per route). */
export function requireScopes(held: readonly string[], events: readonly string[]): void {
  const missing = scopesFor(events).filter((s) => !held.includes(s));
  if (missing.length > 0)
    throw fail(
      "missing_scope",
      `subscribing to these events needs the scope ${missing.join(" and ")}`,
      missing.map((s) => ({ path: "scope", message: s })),
    );
}

/** The events once each, in the order given. */
export const distinct = (events: readonly string[]) => [...new Set(events)];

/** A PATCH applied (docs/api/webhooks.md §Circuit breaker): `active: true` clears the reason and the breaker's clock. */
export function applyPatch(s: SubscriptionRecord, c: SubscriptionChanges, now: Date): SubscriptionRecord {
  const next = { ...s };
  if (c.url !== undefined) next.url = c.url;
  if (c.events !== undefined) next.events = distinct(c.events);
  if (c.description !== undefined) next.description = c.description;
  if (c.keyId !== undefined) next.keyId = c.keyId;
  if (c.active === true) {
    next.active = true;
    next.disabledReason = null;
    next.failingSince = null;
  } else if (c.active === false) next.active = false;
  const same =
    next.url === s.url &&
    next.events.join() === s.events.join() &&
    next.description === s.description &&
    next.keyId === s.keyId &&
    next.active === s.active &&
    next.disabledReason === s.disabledReason &&
    next.failingSince?.getTime() === s.failingSince?.getTime();
  return same ? s : { ...next, updatedAt: now };
}
