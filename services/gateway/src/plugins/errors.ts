import { DomainError } from "@funil/errors";
import {
  ConnectError,
  causeOf,
  type DescribedError,
  describeError,
  UNAVAILABLE_RETRY_AFTER_S,
} from "@funil/rpc";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";

export function errorBody(code: string, message: string, details?: Array<{ path: string; message: string }>) {
  return { error: details ? { code, message, details } : { code, message } };
}

/**
 * An outage's 503 is one warn line per request without a stack, and tells the
 * client when to retry; any other 5xx is a bug: an error line with its stack
 * (the request id comes with req.log).
 */
function answer(req: FastifyRequest, reply: FastifyReply, err: unknown) {
  const described: DescribedError = describeError(err);
  if (described.code === "unavailable") {
    req.log.warn({ cause: causeOf(err) }, "upstream unavailable");
    reply.header("retry-after", String(UNAVAILABLE_RETRY_AFTER_S));
  } else if (described.status >= 500) {
    req.log.error({ err }, "request failed");
  }
  if (described.replayed) reply.header("idempotent-replayed", "true");
  return reply.code(described.status).send(errorBody(described.code, described.message, described.details));
}

/**
 * One error handler (API.md §1): every failure answers
 * {"error": {code, message, details?}}; a 5xx never shows its cause.
 */
export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof DomainError || err instanceof ConnectError) return answer(req, reply, err);
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
    return answer(req, reply, err);
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(errorBody("not_found", `no route ${req.method} ${req.url.split("?")[0]}`));
  });
});
