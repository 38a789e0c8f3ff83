import { create, type JsonObject } from "@bufbuild/protobuf";
import { DomainEventSchema, type ListEventsRequest, ListEventsRequestSchema } from "@funil/contracts";
import { fail, notFound } from "@funil/errors";
import { decodeCursor, encodeCursor, pageJsonOnce, plainOf } from "@funil/rpc";
import { check, eventTypesOf, listEventsQuery, WEBHOOK_EVENTS, type WebhookEvent } from "@funil/schemas";
import type { EventLogStore, LoggedEvent } from "../store/event-log.js";

export interface EventLogDeps {
  events: EventLogStore;
  /** The position in EVENTS up to which the log holds every event (events/event-log.ts). */
  loggedUpTo: () => Promise<number>;
}

const ALL = Object.keys(WEBHOOK_EVENTS) as WebhookEvent[];
/** The read scopes of the subscribable events: a catch-up needs one of them. */
export const READ_SCOPES = [...new Set(Object.values(WEBHOOK_EVENTS))];

/**
 * The event types a catch-up lists (docs/api/events.md §Catch-up: GET /events): those asked for, or every
 * subscribable one, of the key's read scopes. Asking for a type the key cannot read is 403 missing_scope
 * naming the scope; without `type`, the types of scopes it lacks are left out.
 */
export function readableTypes(type: string | undefined, scopes: readonly string[]): WebhookEvent[] {
  if (type === undefined) {
    const readable = ALL.filter((t) => scopes.includes(WEBHOOK_EVENTS[t]));
    if (readable.length === 0)
      throw fail(
        "missing_scope",
        `reading events needs the scope ${READ_SCOPES.join(" or ")}`,
        READ_SCOPES.map((s) => ({ path: "scope", message: s })),
      );
    return readable;
  }
  const asked = eventTypesOf(type) as WebhookEvent[];
  const missing = [...new Set(asked.map((t) => WEBHOOK_EVENTS[t]).filter((s) => !scopes.includes(s)))];
  if (missing.length > 0)
    throw fail(
      "missing_scope",
      `reading these events needs the scope ${missing.join(" and ")}`,
      missing.map((s) => ({ path: "scope", message: s })),
    );
  return asked;
}

/** A line of the log as the API shows it: the envelope a webhook receiver gets. */
function domainEvent(e: LoggedEvent) {
  const body = JSON.parse(e.body) as {
    id: string;
    type: string;
    createdAt: string;
    workspaceId: string;
    data: JsonObject;
  };
  return create(DomainEventSchema, body);
}

/**
 * GET /events (docs/api/events.md §Catch-up: GET /events): the workspace's events after `after` (or after
 * the cursor's position), in the order of EVENTS, up to where the log is complete. An `after` the log
 * does not hold in this workspace (unknown, another workspace's, or swept) is 404, the same for all three.
 */
export function listEvents(deps: EventLogDeps) {
  return async (req: ListEventsRequest) => {
    const { cursor, limit, ...bound } = check(
      listEventsQuery,
      plainOf(ListEventsRequestSchema, req, ["workspaceId", "scopes", "apiJson"]),
      "query",
    );
    const types = readableTypes(bound.type, req.scopes);
    const filters = { ...bound, workspaceId: req.workspaceId };
    let from = 0;
    if (cursor) from = decodeCursor(cursor, "events", filters, ["number"])[0] as number;
    else if (bound.after !== undefined) {
      const seq = await deps.events.seqOf(req.workspaceId, bound.after);
      if (seq === undefined) throw notFound("event");
      from = seq;
    }
    const upTo = await deps.loggedUpTo();
    const rows = await deps.events.list(req.workspaceId, types, from, upTo, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const nextCursor = rows.length > limit && last ? encodeCursor("events", filters, [last.seq]) : undefined;
    // The log holds each event as its deliveries carry it: that text is the page, parsed by no one.
    if (req.apiJson)
      return {
        data: [],
        nextCursor,
        dataJson: pageJsonOnce(rows, () => `[${page.map((e) => e.body).join(",")}]`),
      };
    return { data: page.map(domainEvent), nextCursor };
  };
}
