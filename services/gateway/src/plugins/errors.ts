import { causeOf, describeError, UNAVAILABLE_RETRY_AFTER_S } from "@funil/rpc";
import type { FastifyError, FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";

const CONTEXT: Record<string, string> = {
  querystring: "query",
  body: "body",
  params: "path",
  headers: "headers",
};

export function errorBody(code: string, message: string, details?: Array<{ path: string; message: string }>) {
  return { error: details ? { code, message, details } : { code, message } };
}

/**
 * One error handler (API.md §1): every failure answers
 * {"error": {code, message, details?}}; a 5xx never shows its cause.
 */
export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (hasZodFastifySchemaValidationErrors(err)) {
      const where = CONTEXT[(err as { validationContext?: string }).validationContext ?? ""] ?? "request";
      const details = err.validation.flatMap((v) => {
        const base = [where, ...v.instancePath.split("/").filter(Boolean)];
        const unknown = (v.params as { keys?: string[] }).keys;
        // An unknown field is named by its own path, so a client sees which one.
        if (v.keyword === "unrecognized_keys" && unknown)
          return unknown.map((k) => ({ path: [...base, k].join("."), message: "unknown field" }));
        return [{ path: base.join("."), message: v.message ?? "invalid" }];
      });
      return reply
        .code(400)
        .send(
          errorBody(
            "validation_failed",
            `invalid ${where}: ${details[0]?.path} ${details[0]?.message}`,
            details,
          ),
        );
    }
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return reply
        .code(415)
        .send(errorBody("unsupported_media_type", "send JSON with content-type: application/json"));
    }
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return reply.code(413).send(errorBody("payload_too_large", "request body is too large"));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500 && !("metadata" in err)) {
      // Fastify's own 4xx (malformed JSON, empty body with a JSON content type…).
      return reply.code(400).send(errorBody("validation_failed", err.message));
    }
    const described = describeError(err);
    if (described.code === "unavailable") {
      // An outage, not a bug: one line per request, no stack, and the client is told when to retry.
      req.log.warn({ cause: causeOf(err) }, "upstream unavailable");
      reply.header("retry-after", String(UNAVAILABLE_RETRY_AFTER_S));
    } else if (described.status >= 500) {
      req.log.error({ err }, "request failed");
    }
    return reply.code(described.status).send(errorBody(described.code, described.message, described.details));
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(errorBody("not_found", `no route ${req.method} ${req.url.split("?")[0]}`));
  });
});
