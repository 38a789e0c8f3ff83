import { acknowledgedUpTo, type NatsConnection } from "@funil/bus";
import type { Naming } from "@funil/config";
import { fail } from "@funil/errors";
import { FANOUT_DURABLE } from "./fanout.js";

/**
 * How far the event log is complete, as a position in EVENTS (docs/api/events.md §Catch-up: GET /events).
 * The fan-out writes events side by side, so a later event can be in the log before an earlier one; it
 * acknowledges each event once its transaction committed, so every event up to the consumer's ack floor
 * is in the log. A catch-up lists only that far: a client never sees an event while an earlier one is
 * still on its way, which it would skip for good once it moved past it. When NATS does not answer, the
 * last floor it gave stands (a floor never goes back).
 */
export function loggedUpTo(
  nc: NatsConnection,
  names: Naming,
  maxAgeMs = FLOOR_MAX_AGE_MS,
): () => Promise<number> {
  return floorOf(acknowledgedUpTo(nc, names.stream("EVENTS"), FANOUT_DURABLE), maxAgeMs);
}

/**
 * How long a floor NATS gave is used again before it is asked anew. An older floor is still a floor (every
 * event at or below it is in the log), so a catch-up can only list an event up to this much later than it
 * could; asking at every call cost the webhooks service ~17 % of its CPU on GET /events and the NATS
 * server ~200 µs per call.
 */
export const FLOOR_MAX_AGE_MS = 50;

/**
 * The floor as `ask` gives it, kept monotonic (loggedUpTo). An answer asked less than `maxAgeMs` ago is
 * used again; otherwise the catch-ups that ask in one turn of the event loop (the calls of one RPC batch)
 * share one question, sent after the last of them asked, and one that asks once the question is out waits
 * for a new one.
 */
export function floorOf(ask: () => Promise<number>, maxAgeMs: number): () => Promise<number> {
  let last: number | undefined;
  let askedAt = Number.NEGATIVE_INFINITY;
  let next: Promise<number> | undefined;
  const askNow = async () => {
    next = undefined;
    const at = performance.now();
    try {
      last = Math.max(last ?? 0, await ask());
      askedAt = at;
    } catch {
      if (last === undefined) throw fail("unavailable", "the event stream does not answer; retry");
    }
    return last;
  };
  return () => {
    if (last !== undefined && performance.now() - askedAt < maxAgeMs) return Promise.resolve(last);
    next ??= new Promise<void>((resolve) => setImmediate(resolve)).then(askNow);
    return next;
  };
}
