import { z } from "zod";
import { cursor, limit, timestamp } from "./common.js";

/** GET /platform/users (SPEC.md §4 Learner usage). */
export const listLearnersQuery = z.strictObject({
  q: z.string().min(1).max(200).optional(),
  activeSince: timestamp.optional(),
  activeBefore: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(50),
});

/** GET /platform/users/{id}: `days` 1..365, default 30 (API.md §10). */
export const learnerQuery = z.strictObject({
  days: z.coerce
    .number({ message: "days must be an integer" })
    .int("days must be an integer")
    .min(1, "days must be between 1 and 365")
    .max(365, "days must be between 1 and 365")
    .default(30),
});
