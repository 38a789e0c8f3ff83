import { z } from "zod";
import { check, timestamp } from "./common.js";
import { parseTimestamp } from "./time.js";

const id = z.string().min(1).max(200);

/** contact.erased as its consumers read it (docs/api/events.md §Every event type): the id and when, nothing else. */
const contactErasedEvent = z.object({
  id,
  type: z.literal("contact.erased"),
  workspaceId: id,
  data: z.object({ id, erasedAt: timestamp.transform((v) => parseTimestamp(v)!) }),
});

/** What a service needs to erase its copies of a contact. */
export interface ContactErasure {
  /** The event's id: the consumer's inbox key. */
  eventId: string;
  workspaceId: string;
  contactId: string;
  erasedAt: Date;
}

/** A contact.erased envelope, checked (a malformed one is a validation_failed DomainError). */
export function contactErasureOf(event: unknown): ContactErasure {
  const e = check(contactErasedEvent, event, "body");
  return { eventId: e.id, workspaceId: e.workspaceId, contactId: e.data.id, erasedAt: e.data.erasedAt };
}
