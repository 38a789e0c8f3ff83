import { randomUUID } from "node:crypto";
import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
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
import { methodTable } from "./allowed-methods.js";

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
 * One error handler (docs/api/conventions.md §Errors): every failure answers
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
  // What clientErrorHandler needs to know: the request its connection answered last.
  app.addHook("onSend", (req, _reply, payload, done) => {
    answeredLast.set(req.raw.socket, req.raw);
    done(null, payload);
  });
  const methods = methodTable();
  app.addHook("onRoute", (route) => {
    // CORS preflights answer OPTIONS on every path: they say nothing about which methods a path has.
    if (route.method !== "OPTIONS") methods.add(route.method, route.url);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    const allowed = methods.allowed(path);
    if (allowed.length > 0)
      return reply
        .code(405)
        .header("allow", allowed.join(", "))
        .send(
          errorBody(
            "method_not_allowed",
            `${req.method} is not allowed on ${path}; allowed: ${allowed.join(", ")}`,
          ),
        );
    return reply.code(404).send(errorBody("not_found", `no route ${req.method} ${path}`));
  });
});

/** The router's own failures (a malformed percent-encoding…): the error body, before any hook ran. */
export function frameworkError(err: Error, req: FastifyRequest, reply: FastifyReply) {
  reply.header("x-request-id", req.id).code(400).send(errorBody("validation_failed", err.message));
}

/** Per connection, the request it answered last (errorsPlugin's onSend): a body still arriving was answered. */
const answeredLast = new WeakMap<Socket, IncomingMessage>();

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers over 16 KB, a malformed
 * Content-Length…) still answer with the error body and an x-request-id, then the connection closes.
 * A body that turns out malformed after its route answered (a 415 sent before the bad chunk arrived)
 * gets no second answer: the connection only closes, since two answers to one request would corrupt
 * the stream.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket) {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "headers_too_large", "request headers are too large (16 KB at most)"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "request_timeout", "the request took too long to arrive"]
        : [400, "validation_failed", "malformed HTTP request"];
  const body = JSON.stringify(errorBody(code, message));
  // HTTP/1.1 is one request after another: an answered request whose body is not complete is the one
  // the parser was reading.
  const bodyOfAnAnsweredRequest = answeredLast.get(socket)?.complete === false;
  if (socket.writable && !bodyOfAnAnsweredRequest)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${body}`,
    );
  socket.destroy(err);
}
