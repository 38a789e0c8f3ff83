import { z } from "zod";
import { cursor, limit, timestamp } from "./common.js";

/** GET /platform/users (docs/api/learners.md §GET /platform/users). */
export const listLearnersQuery = z.strictObject({
  q: z.string().min(1).max(200).optional(),
  activeSince: timestamp.optional(),
  activeBefore: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(50),
});

/** GET /platform/users/{id}: `days` 1..365, default 30 (docs/api/learners.md §GET /platform/users/{id}). */
export const learnerQuery = z.strictObject({
  days: z.coerce
    .number({ message: "days must be an integer" })
    .int("days must be an integer")
    .min(1, "days must be between 1 and 365")
    .max(365, "days must be between 1 and 365")
    .default(30),
});
