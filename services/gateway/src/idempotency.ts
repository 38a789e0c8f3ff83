import type { CallOptions } from "@connectrpc/connect";
import { REPLAYED_HEADER } from "@funil/rpc";
import { idempotencyKey, z } from "@funil/schemas";
import type { FastifyReply, FastifyRequest } from "fastify";
import { writeOptions } from "./origin.js";
import { errorResponses } from "./schemas/common.js";

/**
 * The gateway's side of Idempotency-Key (docs/api/conventions.md §Idempotency-Key),
 * one shape for every POST that creates or changes something: the header is
 * checked and passed on; the service that owns the write remembers and replays.
 */

/** The `headers` schema of a route that accepts a key. */
export const idempotencyHeaders = z.object({ "idempotency-key": idempotencyKey.optional() });

/** Said in the description of every such route. */
export const IDEMPOTENCY_NOTE =
  "Accepts Idempotency-Key: a repeat of the same request within 24 h replays the first response " +
  "(header idempotent-replayed: true); another body under the same key is 422 idempotency_key_reused; " +
  "a repeat while the first is in flight is 409 idempotency_key_in_use.";

/** The statuses a key adds to a route's answers. */
export const idempotencyErrors = errorResponses(409, 422);

/**
 * Calls the owning service with the request's key and its caller (origin.ts) and marks a replayed
 * answer (a replayed failure is marked by the errors plugin).
 */
export async function withIdempotencyKey<T>(
  req: FastifyRequest,
  reply: FastifyReply,
  call: (key: string | undefined, options: CallOptions) => Promise<T>,
): Promise<T> {
  let replayed = false;
  const key = req.headers["idempotency-key"];
  const res = await call(typeof key === "string" ? key : undefined, {
    ...writeOptions(req),
    onHeader: (headers) => {
      replayed = headers.get(REPLAYED_HEADER) === "true";
    },
  });
  if (replayed) reply.header("idempotent-replayed", "true");
  return res;
}
