import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { errorBody } from "./errors.js";

/** What Node's parser takes for a 100-continue expectation (it answers that one itself). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * Requests Node's HTTP server would answer itself, with an empty body and none of our headers, reach
 * the routes' hooks instead and get the error body there: an `Expect` other than 100-continue (417
 * expectation_failed: an expectation the server cannot meet is said, not ignored) and an HTTP/1.1
 * request without `Host` (400 validation_failed). Both are refused in preParsing, after the key and the
 * rate limit were taken, so they carry x-request-id and, under /api/v1, the x-ratelimit-* headers.
 * The server must be built with `http: { requireHostHeader: false }`.
 */
export const httpEdgePlugin = fp(async (app: FastifyInstance) => {
  // Handled here, Node does not answer 417 itself: the request goes on to Fastify like any other.
  app.server.on("checkExpectation", (req, res) => app.server.emit("request", req, res));
  app.addHook("preParsing", (req, reply, payload, done) => {
    const expect = req.headers.expect;
    if (expect !== undefined && !CONTINUE.test(expect)) {
      reply
        .code(417)
        .send(errorBody("expectation_failed", "the only expectation this server meets is 100-continue"));
      return;
    }
    if (req.raw.httpVersion === "1.1" && !req.headers.host) {
      reply.code(400).send(errorBody("validation_failed", "an HTTP/1.1 request needs a Host header"));
      return;
    }
    done(null, payload);
  });
});
