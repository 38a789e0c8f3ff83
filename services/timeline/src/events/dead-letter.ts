import { type JsMsg, publisher } from "@funil/bus";
import { DomainError } from "@funil/errors";
import type { Infra } from "@funil/rpc";
import { type IngestDeadLetter, ingestDeadSubject } from "@funil/schemas";

/** Why a message can never be processed (not JSON, or against the contract), or undefined. */
function refusal(err: unknown) {
  if (err instanceof SyntaxError) return { message: `not JSON: ${err.message}`, details: undefined };
  if (err instanceof DomainError && err.code === "validation_failed")
    return { message: err.message, details: err.details };
  return undefined;
}

/**
 * Keeps a message the contract refuses on the dead-letter subject with the
 * reason, logged, and acknowledges it, so it never blocks the consumer; any
 * other failure (the database away) is thrown again, for a retry.
 */
export function deadLetters(infra: Pick<Infra, "nc" | "names" | "log">) {
  const publish = publisher(infra.nc);
  const encoder = new TextEncoder();
  return async (subject: string, msg: JsMsg, err: unknown) => {
    const refused = refusal(err);
    if (!refused) throw err;
    infra.log.warn({ subject, seq: msg.seq, ...refused }, "message refused, sent to the dead letters");
    const body: IngestDeadLetter = {
      subject,
      seq: msg.seq,
      reason: refused.message,
      details: refused.details,
      payload: msg.string(),
    };
    // The stream sequence as message id: a refusal redelivered before its ack is kept once.
    await publish(
      infra.names.subject(ingestDeadSubject(subject)),
      encoder.encode(JSON.stringify(body)),
      `dead:${msg.info.stream}:${msg.seq}`,
    );
    msg.ack();
  };
}

/** The subject of a message without the FUNIL_ENV prefix. */
export function subjectOf(infra: Pick<Infra, "names">) {
  const prefix = infra.names.subject("");
  return (msg: JsMsg) => msg.subject.slice(prefix.length);
}

/**
 * Handles one message: `apply` parses and stores it. A message the contract
 * refuses goes to the dead letters (above); any other failure is thrown, and
 * the consumer naks it for a later retry.
 */
export function handler(
  infra: Pick<Infra, "nc" | "names" | "log">,
  apply: (subject: string, msg: JsMsg) => Promise<void>,
) {
  const refuse = deadLetters(infra);
  const subject = subjectOf(infra);
  return async (msg: JsMsg) => {
    try {
      await apply(subject(msg), msg);
    } catch (err) {
      return refuse(subject(msg), msg, err);
    }
    msg.ack();
  };
}
