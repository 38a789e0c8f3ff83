import { consume } from "@funil/bus";
import { DomainError } from "@funil/errors";
import { causeOf, type Infra } from "@funil/rpc";
import { contactErasureOf } from "@funil/schemas";
import type { ErasureStore } from "../store/erasures.js";

/**
 * The durable consumer of contact.erased (docs/api/contacts.md §POST /contacts/{id}/erase), shared by every copy: each
 * erasure applied once. A failure (the database away) naks it for a retry a second later; an event
 * against the contract, which crm never writes, is logged and dropped rather than retried forever.
 */
export function startErasures(infra: Pick<Infra, "nc" | "names" | "log">, erasures: ErasureStore) {
  const { names, log } = infra;
  return consume(
    infra.nc,
    {
      stream: names.stream("EVENTS"),
      durable: "scheduling-erasures",
      filterSubject: names.subject("events.contact.erased"),
    },
    async (msg) => {
      let erasure: ReturnType<typeof contactErasureOf>;
      try {
        erasure = contactErasureOf(msg.json());
      } catch (err) {
        if (!(err instanceof SyntaxError || err instanceof DomainError)) throw err;
        log.error({ seq: msg.seq, cause: causeOf(err) }, "contact.erased refused");
        msg.term();
        return;
      }
      await erasures.erase(erasure);
      msg.ack();
    },
    (err) => log.warn({ cause: causeOf(err) }, "erasure: will retry"),
  );
}
