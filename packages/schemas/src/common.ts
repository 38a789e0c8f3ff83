import { type ErrorDetail, invalid } from "@funil/errors";
import { z } from "zod";
import { parseTimestamp } from "./time.js";

/**
 * Where a value came from, named as the HTTP request names it. A service that
 * checks a gRPC request uses the same names, so both paths answer with the
 * same validation_failed details.
 */
export type Part = "body" | "query" | "path" | "headers";

/** A zod failure as the details of validation_failed: one entry per problem, unknown fields by name. */
export function problemsOf(error: z.ZodError, where: Part): ErrorDetail[] {
  return error.issues.flatMap((issue) => {
    const base = [where, ...issue.path.map(String)];
    if (issue.code === "unrecognized_keys")
      return issue.keys.map((k) => ({ path: [...base, k].join("."), message: "unknown field" }));
    return [{ path: base.join("."), message: issue.message }];
  });
}

/** A UTF-16 surrogate without its other half: no Unicode scalar value, so no UTF-8 text either. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const NUL_MESSAGE = "strings may not contain the NUL character (\\u0000)";
const SURROGATE_MESSAGE =
  "strings must be Unicode text: a lone surrogate (\\ud800-\\udfff without its pair) is not a character";

/** Why a string cannot be kept as it was sent, or undefined when it can. */
function badText(text: string): string | undefined {
  if (text.includes("\u0000")) return NUL_MESSAGE;
  if (LONE_SURROGATE.test(text)) return SURROGATE_MESSAGE;
  return undefined;
}

/**
 * The first string (value or key) of a value that cannot be stored as sent,
 * with where it is and why, or undefined: a NUL character (PostgreSQL text and
 * jsonb cannot hold one) or a lone surrogate (UTF-8, which every store and
 * the RPC wire speak, cannot hold one: it would come back as U+FFFD).
 * Iterative, so no nesting depth overflows it.
 */
export function badTextIn(value: unknown): { path: string; message: string } | undefined {
  const stack: Array<[unknown, string]> = [[value, ""]];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === "string") {
      const message = badText(v);
      if (message) return { path, message };
    } else if (Array.isArray(v)) {
      for (const [i, item] of v.entries()) stack.push([item, path ? `${path}.${i}` : String(i)]);
    } else if (v && typeof v === "object") {
      for (const [k, item] of Object.entries(v)) {
        const at = path ? `${path}.${k}` : k;
        const message = badText(k);
        if (message) return { path: at, message };
        stack.push([item, at]);
      }
    }
  }
  return undefined;
}

/**
 * What was sent is what is kept: a string with a NUL character or a lone
 * surrogate is a 400 naming where it is, never stored changed.
 */
export function refuseBadText(value: unknown, where: Part): void {
  const bad = badTextIn(value);
  if (bad) throw invalid([{ path: bad.path ? `${where}.${bad.path}` : where, message: bad.message }], where);
}

/**
 * The one way a field rule is applied, by the gateway (HTTP) and by the
 * service that owns the data (gRPC): parses `value` with `schema` or throws
 * validation_failed naming every problem. A string with a NUL character or a
 * lone surrogate is refused whatever the schema says (docs/api/conventions.md §Text is kept as sent).
 */
export function check<S extends z.ZodType>(schema: S, value: unknown, where: Part): z.output<S> {
  refuseBadText(value, where);
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw invalid(problemsOf(result.error, where), where);
}

/** ISO-8601 with an offset (docs/api/conventions.md §Timestamps); anything else is a 400. */
export const timestamp = z.iso
  .datetime({ offset: true, message: "must be an ISO-8601 timestamp with offset" })
  .refine((v) => parseTimestamp(v) !== undefined, "must be a timestamp between the years 1 and 9999");

export const limit = (defaultValue: number) =>
  z
    .unknown()
    // A number from gRPC; from a query string plain decimal digits only: `1e1`, ` 10` or `0x10` are
    // a 400, not whatever Number() makes of them.
    .transform((v, ctx) => {
      if (typeof v === "number" || (typeof v === "string" && /^[0-9]{1,4}$/.test(v))) return Number(v);
      ctx.addIssue({ code: "custom", message: "limit must be an integer between 1 and 500" });
      return z.NEVER;
    })
    .pipe(
      z
        .number()
        .int("limit must be an integer")
        .min(1, "limit must be between 1 and 500")
        .max(500, "limit must be between 1 and 500"),
    )
    .default(defaultValue)
    .meta({ type: "integer", minimum: 1, maximum: 500, default: defaultValue });

// Long or malformed cursors are judged by the service, which answers invalid_cursor.
export const cursor = z.string().min(1).max(10_000);

/** An id given by a client: bounded, so a huge value is a 400 and never reaches a query. */
export const ref = z.string().min(1, "must not be empty").max(200, "at most 200 characters");

export const idParam = z.strictObject({ id: ref });

/** A string field of a body, bounded. */
export const text = (max = 500) => z.string().max(max, `at most ${max} characters`);

/** A required text that is more than spaces. */
export const title = (max: number, name = "title") =>
  text(max)
    .min(1, `${name} must not be empty`)
    .refine((t) => t.trim() !== "", `${name} must not be empty`);

const tag = z.string().min(1, "tags cannot be empty").max(60, "a tag has at most 60 characters");
export const tags = z.array(tag).max(100, "at most 100 tags");

/** JSON values of customFields: any type, bounded in size. */
export const customFieldsInput = z
  .record(z.string().min(1).max(64), z.unknown())
  .refine((v) => Object.keys(v).length <= 100, "at most 100 custom fields")
  .refine((v) => JSON.stringify(v).length <= 32_768, "customFields is too large (32 KiB at most)");

/** The five utm keys, each settable (a string), clearable (null) or absent. */
export const utmPatch = z.strictObject({
  source: text(200).nullable().optional(),
  medium: text(200).nullable().optional(),
  campaign: text(200).nullable().optional(),
  term: text(200).nullable().optional(),
  content: text(200).nullable().optional(),
});

/** Optional create fields also accept null, meaning "not given". */
export const opt = <T extends z.ZodType>(schema: T) => schema.nullable().optional();
