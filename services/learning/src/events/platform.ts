import {
  type ConsumerName,
  consume,
  consumerSpec,
  type JsMsg,
  type NatsConnection,
  publisher,
} from "@funil/bus";
import type { Logger, Naming } from "@funil/config";
import { PLATFORM_DEAD_LETTER as DEAD_LETTER, type PlatformDeadLetter } from "@funil/schemas";
import { type Checked, checkMessage, describeProblems } from "../messages.js";
import type { PlatformStore } from "../store/platform.js";

const CONSUMER = "learning-platform" satisfies ConsumerName;

function checked(m: JsMsg, subject: string): Checked {
  let data: unknown;
  try {
    data = m.json();
  } catch {
    return { ok: false, problems: [{ path: "data", message: "is not JSON" }] };
  }
  return checkMessage(subject, data);
}

/**
 * The live stream (docs/api/learners.md §Ingest): a durable consumer of PLATFORM shared by every
 * copy of the service. Each message is applied once (inbox keyed by its
 * Nats-Msg-Id, else its stream sequence) in one transaction; a message that
 * fails its schema is logged, sent to the dead-letter subject with the reason
 * and acknowledged; a database failure throws, and consume() naks it for a
 * later retry.
 */
export function startPlatformConsumer(deps: {
  nc: NatsConnection;
  names: Naming;
  store: PlatformStore;
  log: Logger;
}) {
  const { names, log, store } = deps;
  const prefix = names.subject("");
  const deadLetter = names.subject(DEAD_LETTER);
  const publish = publisher(deps.nc);
  return consume(
    deps.nc,
    consumerSpec(names, CONSUMER),
    async (m) => {
      const subject = m.subject.slice(prefix.length);
      if (subject === DEAD_LETTER) return m.ack();
      const messageId = m.headers?.get("Nats-Msg-Id") || `seq:${m.seq}`;
      const result = checked(m, subject);
      if (!result.ok) {
        const reason = describeProblems(result.problems);
        log.warn({ subject, messageId, reason }, "platform message refused: sent to the dead letters");
        const letter: PlatformDeadLetter = {
          subject,
          messageId,
          reason,
          problems: result.problems,
          data: m.string(),
        };
        await publish(deadLetter, new TextEncoder().encode(JSON.stringify(letter)), `dead:${messageId}`);
        return m.ack();
      }
      await store.applyOnce(CONSUMER, messageId, result.message);
      m.ack();
    },
    (err) => log.warn({ err }, "platform consumer: message not applied, will retry"),
  );
}
