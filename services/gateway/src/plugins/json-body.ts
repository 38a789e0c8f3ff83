import { isUtf8 } from "node:buffer";
import { invalid } from "@funil/errors";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/**
 * How deep a JSON body may nest. No field of the API nests past a handful of levels, crm's protobuf
 * decoding gives up at 100 (a customFields list 50 deep reaches it), and every later walk of the value
 * has to survive it: deeper bodies are refused before anything else looks at them.
 */
export const MAX_JSON_DEPTH = 32;

/** Whether a parsed value nests past `maxDepth`, found with its own stack so no input overflows it. */
export function tooDeep(value: unknown, maxDepth = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [v, depth] = next;
    if (v === null || typeof v !== "object") continue;
    if (depth >= maxDepth) return true;
    for (const item of Object.values(v)) stack.push([item, depth + 1]);
  }
  return false;
}

/** Where the first byte that is not part of well-formed UTF-8 sits (the text before it is valid). */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // The lead byte says how many continuation bytes follow and the range the second one must fall in
    // (no overlong forms, no surrogates U+D800-DFFF, nothing past U+10FFFF).
    const [count, low, high] =
      b >= 0xc2 && b <= 0xdf
        ? [1, 0x80, 0xbf]
        : b === 0xe0
          ? [2, 0xa0, 0xbf]
          : b === 0xed
            ? [2, 0x80, 0x9f]
            : b >= 0xe1 && b <= 0xef
              ? [2, 0x80, 0xbf]
              : b === 0xf0
                ? [3, 0x90, 0xbf]
                : b === 0xf4
                  ? [3, 0x80, 0x8f]
                  : b >= 0xf1 && b <= 0xf3
                    ? [3, 0x80, 0xbf]
                    : [0, 0, 0];
    if (count === 0 || i + count >= bytes.length) return i;
    const second = bytes[i + 1]!;
    if (second < low || second > high) return i;
    for (let k = 2; k <= count; k++) if (bytes[i + k]! < 0x80 || bytes[i + k]! > 0xbf) return i;
    i += count + 1;
  }
  return -1;
}

/**
 * Where in the parsed body invalid UTF-8 was: the bytes before it decode as sent, a marker stands in for
 * the first invalid byte and the rest is decoded as Node would, so the field that holds the marker is the
 * one whose text was invalid. Undefined when no field holds it (the bytes were outside any string, or the
 * text does not parse): then the details name the body as a whole.
 */
function fieldOfInvalidUtf8(bytes: Buffer, at: number): string | undefined {
  const marker = "\uFFFF\u{10FFFF}invalid\uFFFF";
  const text = `${bytes.toString("utf8", 0, at)}${marker}${bytes.toString("utf8", at + 1)}`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const stack: Array<[unknown, string]> = [[value, ""]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [v, path] = next;
    if (typeof v === "string" && v.includes(marker)) return path;
    if (v === null || typeof v !== "object") continue;
    for (const [k, item] of Object.entries(v)) {
      const where = path ? `${path}.${k}` : k;
      // A key is named as it decodes, U+FFFD where the invalid byte was.
      if (k.includes(marker)) return where.replace(marker, "\uFFFD");
      stack.push([item, where]);
    }
  }
  return undefined;
}

/**
 * A body that is not well-formed UTF-8 is refused, never decoded with U+FFFD in place of what was sent:
 * 400 validation_failed naming the field whose string held the bytes (`body.company`), or `body` when
 * they cannot be given to one field.
 */
function refuseInvalidUtf8(bytes: Buffer): void {
  if (isUtf8(bytes)) return;
  const at = firstInvalidUtf8(bytes);
  const field = fieldOfInvalidUtf8(bytes, at);
  throw invalid(
    [
      {
        path: field ? `body.${field}` : "body",
        message: `strings must be valid UTF-8 (an invalid byte sequence at byte ${at} of the body)`,
      },
    ],
    "body",
  );
}

/**
 * JSON bodies: checked to be UTF-8, parsed with Fastify's own prototype-poisoning guards, then refused
 * when too deep, before any hook or handler sees them; a body of any other content type is a 415. An
 * empty body is no body, so a client that always sends `content-type: application/json` can still call
 * the routes that take none (the schemas of the routes that need one answer validation_failed).
 */
export const jsonBodyPlugin = fp(async (app: FastifyInstance) => {
  const parse = app.getDefaultJsonParser("error", "error");
  // JSON only: Fastify's own text/plain parser would hand a string to the body's validation (a 400)
  // where any body that is not JSON is a 415 unsupported_media_type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (req, raw, done) => {
    const bytes = raw as Buffer;
    try {
      refuseInvalidUtf8(bytes);
    } catch (err) {
      return done(err as Error, undefined);
    }
    const body = bytes.toString("utf8");
    if (body.trim() === "") return done(null, undefined);
    parse(req, body, (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined);
      if (tooDeep(value))
        return done(
          Object.assign(new Error(`JSON may not nest deeper than ${MAX_JSON_DEPTH} levels`), {
            statusCode: 400,
          }),
          undefined,
        );
      done(null, value);
    });
  });
});
