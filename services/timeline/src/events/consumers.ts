import { type Consumer, consume, consumeBatches, consumerSpec, type JsMsg } from "@funil/bus";
import type { Infra } from "@funil/rpc";
import { causeOf } from "@funil/rpc";
import { contactErasureOf } from "@funil/schemas";
import { ledgerItemOf } from "../activity.js";
import {
  type Assignment,
  type IngestItem,
  type InteractionRecord,
  ingestItemOf,
  noteInteractionOf,
} from "../ingest.js";
import type { ErasureStore } from "../store/erasures.js";
import type { InteractionStore } from "../store/interactions.js";
import type { SummaryStore } from "../store/summaries.js";
import { deadLetters, handler, subjectOf } from "./dead-letter.js";

/**
 * Ingest messages stored in one statement, and such batches one process writes at once (each holds
 * one connection of the pool while it runs): a backlog drains in batches of INGEST_BATCH, a lone
 * message is stored on its own at once. Batch × (concurrency + 1) stays under the server's default
 * max_ack_pending (1000).
 */
const INGEST_BATCH = 200;
const INGEST_CONCURRENCY = 3;

/** A message that stores something: an interaction, the assignment it shows, or an assignment alone. */
type Storable = { msg: JsMsg; item: Exclude<IngestItem, { kind: "excluded" }> };

type ConsumerInfra = Pick<Infra, "nc" | "names" | "log">;
type OnError = (err: unknown) => void;

/**
 * The timeline's durable consumers (docs/api/interactions.md §Ingest), shared by every copy of the
 * service: the inbox (messages and reassignments), calls and e-mails from
 * INGEST, and the domain events of EVENTS (notes and the activity ledger).
 * NATS 2.9 takes one filter subject per consumer, hence one per source.
 */
export async function startConsumers(
  infra: ConsumerInfra,
  stores: { interactions: InteractionStore; summaries: SummaryStore; erasures: ErasureStore },
): Promise<Consumer[]> {
  const { names, log } = infra;
  const { interactions, summaries, erasures } = stores;
  const onError: OnError = (err) => log.warn({ cause: causeOf(err) }, "consumer: will retry");
  const ingest = ingestBatches(infra, interactions, onError);

  const events = handler(infra, async (subject, msg) => {
    const event = msg.json();
    if (subject === "events.contact.erased") {
      await erasures.erase(contactErasureOf(event));
      return;
    }
    if (subject === "events.note.created") await interactions.add(noteInteractionOf(event));
    await summaries.record(ledgerItemOf(event));
  });

  // Every write here commutes (keyed inserts, least/greatest, the latest assignment wins), so a
  // process writes several batches at once rather than leave the database idle between them.
  const concurrency = INGEST_CONCURRENCY;
  const batch = INGEST_BATCH;
  const ingestConsumer = (durable: "timeline-inbox" | "timeline-calls" | "timeline-emails") =>
    consumeBatches(infra.nc, { ...consumerSpec(names, durable, { concurrency }), batch }, ingest, onError);
  return Promise.all([
    ingestConsumer("timeline-inbox"),
    ingestConsumer("timeline-calls"),
    ingestConsumer("timeline-emails"),
    consume(infra.nc, consumerSpec(names, "timeline-events"), events, onError),
  ]);
}

/**
 * A batch of ingest messages: each parsed alone (a refused one goes to the dead letters alone, an
 * excluded one is acked), the rest stored in one statement and acked once it has committed.
 */
function ingestBatches(infra: ConsumerInfra, interactions: InteractionStore, onError: OnError) {
  const refuse = deadLetters(infra);
  const subject = subjectOf(infra);

  const write = (batch: Storable[]) => {
    const records: InteractionRecord[] = [];
    const assignments: Assignment[] = [];
    for (const { item } of batch) {
      if (item.kind === "interaction") records.push(item.interaction);
      if (item.assignment) assignments.push(item.assignment);
    }
    return interactions.store(records, assignments);
  };

  /** The messages that store something; the others are dead-lettered or acked here. */
  const storable = async (msgs: JsMsg[]) => {
    const batch: Storable[] = [];
    for (const msg of msgs) {
      let item: IngestItem;
      try {
        item = ingestItemOf(subject(msg), msg.json());
      } catch (err) {
        await refuse(subject(msg), msg, err).catch((e) => {
          onError(e);
          msg.nak(1000);
        });
        continue;
      }
      if (item.kind === "excluded") {
        infra.log.debug(
          { subject: subject(msg), seq: msg.seq, reason: item.reason },
          "excluded from the timeline",
        );
        msg.ack();
      } else batch.push({ msg, item });
    }
    return batch;
  };

  /**
   * The database refused the batch: each message alone, so that one it can never store (or an
   * outage) brings back only what failed, a second later.
   */
  const eachAlone = async (batch: Storable[]) => {
    let failure: unknown;
    await Promise.all(
      batch.map((one) =>
        write([one]).then(
          () => one.msg.ack(),
          (e) => {
            failure = e;
            one.msg.nak(1000);
          },
        ),
      ),
    );
    // One line for what failed alone (an outage fails them all), not one per message.
    if (failure) onError(failure);
  };

  return async (msgs: JsMsg[]) => {
    const batch = await storable(msgs);
    if (batch.length === 0) return;
    try {
      await write(batch);
    } catch (err) {
      if (batch.length === 1) throw err;
      onError(err);
      await eachAlone(batch);
      return;
    }
    for (const { msg } of batch) msg.ack();
  };
}
