import type { CallOptions } from "@connectrpc/connect";
import { type Origin, originHeaders } from "@funil/db";
import type { FastifyRequest } from "fastify";

/**
 * Who makes a request's changes and in which request (docs/api/events.md §Who made a change). A request
 * with a key is that key's; the admin API has no key and is `admin`.
 */
export function requestOrigin(req: FastifyRequest): Origin {
  return { actor: req.caller ? { type: "key", id: req.caller.keyId } : { type: "admin" }, requestId: req.id };
}

/**
 * The call options of a write made for `req`: its origin as headers, which the service writes into the
 * change's events. The gateway's own changes (workspaces, API keys) take requestOrigin directly.
 */
export function writeOptions(req: FastifyRequest): CallOptions {
  return { headers: originHeaders(requestOrigin(req)) };
}
