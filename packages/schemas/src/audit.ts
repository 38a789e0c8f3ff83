import { z } from "zod";
import { cursor, limit, ref, timestamp } from "./common.js";

/**
 * The entities GET /audit lists changes of (docs/api/events.md §Audit: GET /audit): the first word of
 * their events' types.
 */
export const AUDIT_ENTITIES = [
  "contact",
  "opportunity",
  "task",
  "note",
  "pipeline",
  "meeting",
  "webhook",
  "custom_field",
  "member",
  "calendar",
  "workspace",
  "api_key",
] as const;

/** GET /audit: a workspace's changes, oldest first; `id` needs `entity`. */
export const listAuditQuery = z.strictObject({
  entity: z.enum(AUDIT_ENTITIES).optional(),
  id: ref.optional(),
  after: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(100),
});
