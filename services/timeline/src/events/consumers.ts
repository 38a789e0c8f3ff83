import { type Consumer, consume } from "@funil/bus";
import type { Infra } from "@funil/rpc";
import { causeOf } from "@funil/rpc";
import { ledgerItemOf } from "../activity.js";
import { ingestItemOf, noteInteractionOf } from "../ingest.js";
import type { InteractionStore } from "../store/interactions.js";
import type { SummaryStore } from "../store/summaries.js";
import { handler } from "./dead-letter.js";

/** Ingest messages one process handles at once; past the pool (DATABASE_POOL_MAX) they wait for a connection. */
const INGEST_CONCURRENCY = 8;

/**
 * The timeline's durable consumers (API.md §8), shared by every copy of the
 * service: the inbox (messages and reassignments), calls and e-mails from
 * INGEST, and the domain events of EVENTS (notes and the activity ledger).
 * NATS 2.9 takes one filter subject per consumer, hence one per source.
 */
export async function startConsumers(
  infra: Pick<Infra, "nc" | "names" | "log">,
  stores: { interactions: InteractionStore; summaries: SummaryStore },
): Promise<Consumer[]> {
  const { names, log } = infra;
  const { interactions, summaries } = stores;

  const ingest = handler(infra, async (subject, msg) => {
    const item = ingestItemOf(subject, msg.json());
    if (item.kind === "interaction") await interactions.add(item.interaction, item.assignment);
    else if (item.kind === "assignment") await interactions.assign(item.assignment);
    else log.debug({ subject, seq: msg.seq, reason: item.reason }, "excluded from the timeline");
  });

  const events = handler(infra, async (subject, msg) => {
    const event = msg.json();
    if (subject === "events.note.created") await interactions.add(noteInteractionOf(event));
    await summaries.record(ledgerItemOf(event));
  });

  const onError = (err: unknown) => log.warn({ cause: causeOf(err) }, "consumer: will retry");
  // Every write here commutes (keyed inserts, least/greatest, the latest assignment wins), so a
  // process handles several messages at once rather than leave the database idle between them.
  const concurrency = INGEST_CONCURRENCY;
  const ingestStream = names.stream("INGEST");
  return Promise.all([
    consume(
      infra.nc,
      {
        stream: ingestStream,
        durable: "timeline-inbox",
        filterSubject: names.subject("ingest.inbox.>"),
        concurrency,
      },
      ingest,
      onError,
    ),
    consume(
      infra.nc,
      {
        stream: ingestStream,
        durable: "timeline-calls",
        filterSubject: names.subject("ingest.call"),
        concurrency,
      },
      ingest,
      onError,
    ),
    consume(
      infra.nc,
      {
        stream: ingestStream,
        durable: "timeline-emails",
        filterSubject: names.subject("ingest.email"),
        concurrency,
      },
      ingest,
      onError,
    ),
    consume(
      infra.nc,
      {
        stream: names.stream("EVENTS"),
        durable: "timeline-events",
        filterSubject: names.subject("events.>"),
      },
      events,
      onError,
    ),
  ]);
}
