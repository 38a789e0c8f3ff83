import { DomainError } from "@funil/errors";
import { ConnectError, describeError } from "@funil/rpc";
import type { FastifyError, FastifyInstance } from "fastify";
import fp from "fastify-plugin";

export function errorBody(code: string, message: string, details?: Array<{ path: string; message: string }>) {
  return { error: details ? { code, message, details } : { code, message } };
}

/**
 * One error handler (API.md §1): every failure answers
 * {"error": {code, message, details?}}; a 5xx never shows its cause.
 */
export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof DomainError || err instanceof ConnectError) {
      const described = describeError(err);
      if (described.status >= 500) req.log.error({ err }, "request failed");
      if (described.replayed) reply.header("idempotent-replayed", "true");
      return reply
        .code(described.status)
        .send(errorBody(described.code, described.message, described.details));
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
    if (described.status >= 500) req.log.error({ err }, "request failed");
    return reply.code(described.status).send(errorBody(described.code, described.message, described.details));
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(errorBody("not_found", `no route ${req.method} ${req.url.split("?")[0]}`));
  });
});
