import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/**
 * How deep a JSON body may nest. No field of the API nests past a handful of levels, crm's protobuf
 * decoding gives up at 100, and a walk over a deeper value is where stacks overflow: deeper bodies are
 * refused before anything else looks at them.
 */
export const MAX_JSON_DEPTH = 32;

const NUL = "strings may not contain the NUL character (\\u0000)";

/**
 * The first reason to refuse a parsed value: nesting past `maxDepth`, or a NUL character in a string or
 * a key (PostgreSQL text cannot hold one). Walks with its own stack, so no input can overflow the
 * call stack.
 */
export function jsonProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): string | undefined {
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [v, depth] = next;
    if (typeof v === "string") {
      if (v.includes("\u0000")) return NUL;
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    if (depth >= maxDepth) return `JSON may not nest deeper than ${maxDepth} levels`;
    for (const [k, item] of Object.entries(v)) {
      if (k.includes("\u0000")) return NUL;
      stack.push([item, depth + 1]);
    }
  }
  return undefined;
}

function badRequest(message: string) {
  return Object.assign(new Error(message), { statusCode: 400 });
}

/**
 * JSON bodies: parsed with Fastify's own prototype-poisoning guards, then checked by jsonProblem before
 * any hook or handler sees them. An empty body is no body, so a client that always sends
 * `content-type: application/json` can still call the routes that take none (their schemas judge the
 * routes that need one).
 */
export const jsonBodyPlugin = fp(async (app: FastifyInstance) => {
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    if ((body as string).trim() === "") return done(null, undefined);
    parse(req, body as string, (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined);
      const problem = jsonProblem(value);
      if (problem) return done(badRequest(problem), undefined);
      done(null, value);
    });
  });
  // Query and path values are flat strings, checked the same way before validation.
  app.addHook("preValidation", async (req) => {
    const problem = jsonProblem(req.query) ?? jsonProblem(req.params);
    if (problem) throw badRequest(problem);
  });
});
