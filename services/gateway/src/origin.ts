import type { CallOptions } from "@connectrpc/connect";
import { type Actor, originHeaders } from "@funil/db";
import type { FastifyRequest } from "fastify";

/**
 * Who makes a request's changes and in which request (docs/api/events.md §Who made a change): the
 * headers every write call to a service carries, which the service writes into the change's events. A
 * request with a key is that key's; the admin API has no key and is `admin`.
 */
export function callerHeaders(req: FastifyRequest): Record<string, string> {
  const actor: Actor = req.caller ? { type: "key", id: req.caller.keyId } : { type: "admin" };
  return originHeaders({ actor, requestId: req.id });
}

/** The call options of a write made for `req`. */
export function writeOptions(req: FastifyRequest): CallOptions {
  return { headers: callerHeaders(req) };
}
