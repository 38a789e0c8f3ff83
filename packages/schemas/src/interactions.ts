import { z } from "zod";
import { cursor, limit, timestamp } from "./common.js";

/** docs/api/interactions.md §Interaction: the channels a client may filter on, and the actors. */
export const interactionChannels = [
  "whatsapp",
  "instagram",
  "facebook",
  "phone",
  "call",
  "email",
  "note",
] as const;
export const interactionActors = ["user", "contact", "ia", "automation", "system", "api", "unknown"] as const;
export const interactionDirection = z.enum(["inbound", "outbound"], {
  message: "direction is inbound or outbound",
});
export const interactionActor = z.enum(interactionActors, {
  message: `actor is one of ${interactionActors.join(", ")}`,
});

/** An id filter of GET /interactions: 1 to 80 characters (docs/api/conventions.md §Limits). */
const filterId = z.string().min(1, "must not be empty").max(80, "at most 80 characters");

/** A comma-separated list of known channels, 1 to 120 characters. */
const channelList = z
  .string()
  .min(1, "must not be empty")
  .max(120, "at most 120 characters")
  .refine(
    (v) => v.split(",").every((c) => (interactionChannels as readonly string[]).includes(c.trim())),
    `a comma-separated list of ${interactionChannels.join(", ")}`,
  );

export const listInteractionsQuery = z.strictObject({
  contactId: filterId.optional(),
  userId: filterId.optional(),
  channel: channelList.optional(),
  direction: interactionDirection.optional(),
  actor: interactionActor.optional(),
  createdAfter: timestamp.optional(),
  createdBefore: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(100),
});
