import { type JsMsg, publisher } from "@funil/bus";
import { DomainError } from "@funil/errors";
import type { Infra } from "@funil/rpc";

/** The subject under which a refused message is kept, inside the INGEST stream (never consumed). */
export const deadSubject = (subject: string) => `ingest.dead.${subject}`;

/** Why a message can never be processed (not JSON, or against the contract), or undefined. */
function refusal(err: unknown) {
  if (err instanceof SyntaxError) return { message: `not JSON: ${err.message}`, details: undefined };
  if (err instanceof DomainError && err.code === "validation_failed")
    return { message: err.message, details: err.details };
  return undefined;
}

/**
 * Handles one message: `apply` parses and stores it. A message the contract
 * refuses is logged, kept on the dead-letter subject with the reason and
 * acknowledged, so it never blocks the consumer; any other failure (the
 * database away) is thrown, and the consumer naks it for a later retry.
 */
export function handler(
  infra: Pick<Infra, "nc" | "names" | "log">,
  apply: (subject: string, msg: JsMsg) => Promise<void>,
) {
  const publish = publisher(infra.nc);
  const prefix = infra.names.subject("");
  const encoder = new TextEncoder();
  return async (msg: JsMsg) => {
    const subject = msg.subject.slice(prefix.length);
    try {
      await apply(subject, msg);
    } catch (err) {
      const refused = refusal(err);
      if (!refused) throw err;
      infra.log.warn({ subject, seq: msg.seq, ...refused }, "message refused, sent to the dead letters");
      const body = {
        subject,
        seq: msg.seq,
        reason: refused.message,
        details: refused.details,
        payload: msg.string(),
      };
      // The stream sequence as message id: a refusal redelivered before its ack is kept once.
      await publish(
        infra.names.subject(deadSubject(subject)),
        encoder.encode(JSON.stringify(body)),
        `dead:${msg.info.stream}:${msg.seq}`,
      );
    }
    msg.ack();
  };
}
