import { parseTimestamp } from "@funil/rpc";
import { z } from "zod";

/** ISO-8601 with an offset (API.md §1); anything else is a 400. */
export const timestamp = z.iso
  .datetime({ offset: true, message: "must be an ISO-8601 timestamp with offset" })
  .refine((v) => parseTimestamp(v) !== undefined, "must be a timestamp between the years 1 and 9999");

/**
 * `limit` 1..500 (API.md §4), written as plain decimal digits: `1e1`, ` 10` or `0x10` are a 400, not
 * whatever Number() makes of them. Documented as the integer it is.
 */
export const limit = (defaultValue: number) =>
  z
    .string()
    .transform((v, ctx) => {
      if (/^[0-9]{1,4}$/.test(v)) return Number(v);
      ctx.addIssue({ code: "custom", message: "limit must be an integer between 1 and 500" });
      return z.NEVER;
    })
    .pipe(z.number().min(1, "limit must be between 1 and 500").max(500, "limit must be between 1 and 500"))
    .default(defaultValue)
    .meta({ type: "integer", minimum: 1, maximum: 500, default: defaultValue });

// Long or malformed cursors are judged by the service, which answers invalid_cursor.
export const cursor = z.string().min(1).max(10_000);

export const idParam = z.strictObject({ id: z.string().min(1).max(200) });

export const errorResponse = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: "Error" });

/** The `response` entries of the given error statuses, all with the one error body (API.md §1). */
export const errorResponses = (...statuses: Array<400 | 401 | 403 | 404 | 409 | 422>) =>
  Object.fromEntries(statuses.map((status) => [status, errorResponse])) as Record<
    `${(typeof statuses)[number]}`,
    typeof errorResponse
  >;

export const page = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), nextCursor: z.string().nullable() });

/** A string field of a body: trimmed length bound; null where the route allows it. */
export const text = (max = 500) => z.string().max(max, `at most ${max} characters`);

/** JSON values of customFields: any type, bounded in size. */
export const customFieldsInput = z
  .record(z.string().min(1).max(64), z.unknown())
  .refine((v) => Object.keys(v).length <= 100, "at most 100 custom fields")
  .refine((v) => JSON.stringify(v).length <= 32_768, "customFields is too large (32 KiB at most)");
