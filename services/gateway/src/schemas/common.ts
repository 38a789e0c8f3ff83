import { z } from "@funil/schemas";

export const errorResponse = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: "Error" });

/** The `response` entries of the given error statuses, all with the one error body (docs/api/conventions.md §Errors). */
export const errorResponses = (...statuses: Array<400 | 401 | 403 | 404 | 409 | 422>) =>
  Object.fromEntries(statuses.map((status) => [status, errorResponse])) as Record<
    `${(typeof statuses)[number]}`,
    typeof errorResponse
  >;
