import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { EventEnvelope } from "./workloads.js";

/** Every message of a run's EVENTS stream, with the time the stream stored it. */
export async function readStream(url: string, stream: string) {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    const out: Array<{ envelope: EventEnvelope; storedAt: number }> = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      if (m) out.push({ envelope: m.json<EventEnvelope>(), storedAt: m.time.getTime() });
    }
    return out;
  } finally {
    await nc.close();
  }
}
