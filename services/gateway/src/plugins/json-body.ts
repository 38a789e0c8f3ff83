import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/**
 * How deep a JSON body may nest. No field of the API nests past a handful of levels, crm's protobuf
 * decoding gives up at 100 (a customFields list 50 deep was a 500), and every later walk of the value
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

/**
 * JSON bodies: parsed with Fastify's own prototype-poisoning guards, then refused when too deep, before
 * any hook or handler sees them; a body of any other content type is a 415. An empty body is no body,
 * so a client that always sends `content-type: application/json` can still call the routes that take
 * none (the schemas of the routes that need one answer validation_failed).
 */
export const jsonBodyPlugin = fp(async (app: FastifyInstance) => {
  const parse = app.getDefaultJsonParser("error", "error");
  // JSON only: Fastify's own text/plain parser would hand a string to the body's validation (a 400)
  // where any body that is not JSON is a 415 unsupported_media_type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    if ((body as string).trim() === "") return done(null, undefined);
    parse(req, body as string, (err: Error | null, value?: unknown) => {
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
