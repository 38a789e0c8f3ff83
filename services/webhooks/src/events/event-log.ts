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
  const ask = acknowledgedUpTo(nc, names.stream("EVENTS"), FANOUT_DURABLE);
  let last: number | undefined;
  return async () => {
    try {
      last = Math.max(last ?? 0, await ask());
    } catch {
      if (last === undefined) throw fail("unavailable", "the event stream does not answer; retry");
    }
    return last;
  };
}
