import { type ConsumerName, consume, consumerSpec } from "@funil/bus";
import { DomainError } from "@funil/errors";
import { type ContactErasure, contactErasureOf } from "@funil/schemas";
import { causeOf } from "./errors.js";
import type { Infra } from "./startup.js";

/**
 * A service's durable consumer of contact.erased (docs/api/contacts.md §POST /contacts/{id}/erase), shared
 * by every copy: `erase` applies one erasure, once (the service's inbox). A failure (the database away)
 * naks it for a retry; an event against the contract, which crm never writes, is logged and dropped
 * rather than retried forever.
 */
export function consumeErasures(
  infra: Pick<Infra, "nc" | "names" | "log">,
  durable: Extract<ConsumerName, `${string}-erasures`>,
  erase: (erasure: ContactErasure) => Promise<unknown>,
) {
  const { names, log } = infra;
  return consume(
    infra.nc,
    consumerSpec(names, durable),
    async (msg) => {
      let erasure: ContactErasure;
      try {
        erasure = contactErasureOf(msg.json());
      } catch (err) {
        if (!(err instanceof SyntaxError || err instanceof DomainError)) throw err;
        log.error({ seq: msg.seq, cause: causeOf(err) }, "contact.erased refused");
        msg.term();
        return;
      }
      await erase(erasure);
      msg.ack();
    },
    (err) => log.warn({ cause: causeOf(err) }, "erasure: will retry"),
  );
}
