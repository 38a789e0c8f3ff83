import { traceparentOf } from "@funil/telemetry";

/**
 * Who made a change, and in which request (docs/api/events.md §Who made a change). The gateway sends both
 * as headers of every write call; a service reads them in its handler and hands them to the store, which
 * writes them into the change's events. A call without them (a consumer, an internal call, an ingest) is
 * the system's.
 */

/** The caller behind a change: an API key, the admin API, or the system itself. */
export type Actor = { type: "key"; id: string } | { type: "admin" } | { type: "system" };

export interface Origin {
  actor: Actor;
  /** The gateway's request id (the x-request-id it answered); null for the system's changes. */
  requestId: string | null;
  /**
   * The W3C traceparent the call came with, when tracing is on: the trace its events carry on when no
   * sampled span is active where they are written (a request not sampled keeps its decision downstream).
   */
  traceparent?: string;
}

/** `key:<keyId>`, `admin` or `system`. */
export const ACTOR_HEADER = "funil-actor";
export const REQUEST_ID_HEADER = "funil-request-id";

export const SYSTEM: Origin = { actor: { type: "system" }, requestId: null };

/** The actor as one word: `key:<keyId>`, `admin`, `system` (the header, and the event log's column). */
export function actorText(actor: Actor): string {
  return actor.type === "key" ? `key:${actor.id}` : actor.type;
}

/** The inverse of actorText; anything else is the system. */
export function actorFromText(text: string | null | undefined): Actor {
  if (text === "admin") return { type: "admin" };
  if (text?.startsWith("key:") && text.length > 4) return { type: "key", id: text.slice(4) };
  return { type: "system" };
}

/** The headers a write call carries for its origin. */
export function originHeaders(origin: Origin): Record<string, string> {
  const headers: Record<string, string> = { [ACTOR_HEADER]: actorText(origin.actor) };
  if (origin.requestId) headers[REQUEST_ID_HEADER] = origin.requestId;
  return headers;
}

/** The origin of an RPC from its request headers (a handler's `ctx.requestHeader`). */
export function originOf(headers: Headers | undefined): Origin {
  const actor = actorFromText(headers?.get(ACTOR_HEADER));
  const traceparent = traceparentOf(headers?.get("traceparent"));
  if (actor.type === "system") return traceparent ? { ...SYSTEM, traceparent } : SYSTEM;
  const requestId = headers?.get(REQUEST_ID_HEADER);
  return {
    actor,
    requestId: requestId ? requestId.slice(0, 200) : null,
    ...(traceparent ? { traceparent } : {}),
  };
}

/** Bookkeeping fields: no change of their own. */
const UNCHANGEABLE = new Set(["id", "workspaceId", "createdAt", "updatedAt"]);

const isSet = (v: unknown) =>
  v !== null &&
  v !== undefined &&
  !(Array.isArray(v) && v.length === 0) &&
  !(typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);

/**
 * The names of the fields a change set or changed: on a create (no `before`) every field that holds a
 * value, on an update every field whose value differs (compared as JSON); `before` given as names is
 * taken as it is. Values are never kept.
 */
export function changedFields(after: unknown, before?: unknown): string[] {
  if (Array.isArray(before)) return [...(before as string[])];
  if (typeof after !== "object" || after === null) return [];
  const prev = (before ?? undefined) as Record<string, unknown> | undefined;
  return Object.entries(after as Record<string, unknown>)
    .filter(([name, value]) => {
      if (UNCHANGEABLE.has(name)) return false;
      if (prev === undefined) return isSet(value);
      return JSON.stringify(value ?? null) !== JSON.stringify(prev[name] ?? null);
    })
    .map(([name]) => name);
}
