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
export function loggedUpTo(nc: NatsConnection, names: Naming): () => Promise<number> {
  return floorOf(acknowledgedUpTo(nc, names.stream("EVENTS"), FANOUT_DURABLE));
}

/**
 * The floor as `ask` gives it, kept monotonic (loggedUpTo). The catch-ups that ask in one turn of the event
 * loop (the calls of one RPC batch) share one question, sent after the last of them asked, so each gets a
 * floor at least as recent as its own request; one that asks once the question is out waits for a new one.
 */
export function floorOf(ask: () => Promise<number>): () => Promise<number> {
  let last: number | undefined;
  let next: Promise<number> | undefined;
  const askNow = async () => {
    next = undefined;
    try {
      last = Math.max(last ?? 0, await ask());
    } catch {
      if (last === undefined) throw fail("unavailable", "the event stream does not answer; retry");
    }
    return last;
  };
  return () => {
    next ??= new Promise<void>((resolve) => setImmediate(resolve)).then(askNow);
    return next;
  };
}
