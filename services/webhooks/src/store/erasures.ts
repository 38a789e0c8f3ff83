import { type EventEnvelope, firstDelivery, type Sql, type TransactionSql } from "@funil/db";
import type { ContactErasure } from "@funil/schemas";
import { contactOf, redactBody } from "../erasure.js";

/** The inbox name of the erasures applied from contact.erased. */
const CONSUMER = "webhooks-erasures";

/** One table's redaction of an erased contact, in the erasure's transaction; returns the rows it changed. */
type Redaction = (tx: TransactionSql, e: ContactErasure) => Promise<number>;

/**
 * The deliveries of the workspace, pending and past, whose body carries the contact: each body
 * redacted (a pending one goes out so, signed afresh at its attempt), and the answers receivers gave
 * to them dropped from the attempt log. Read through each subscription's deliveries_recent index.
 */
const redactDeliveries: Redaction = async (tx, e) => {
  const rows = await tx<{ id: string; subscriptionId: string; type: string; body: string }[]>`
    select d.id, d.subscription_id, d.event as type, d.body from deliveries d
    where d.subscription_id in (select id from subscriptions where workspace_id = ${e.workspaceId})
      and strpos(d.body, ${e.contactId}) > 0`;
  const changed = await rewriteBodies(tx, "deliveries", redacted(rows, e.contactId));
  if (changed.length === 0) return 0;
  await tx`
    update attempts set response_body = null
    where subscription_id = any(${[...new Set(changed.map((c) => c.subscriptionId))]}::text[])
      and delivery_id = any(${changed.map((c) => c.id)}::text[]) and response_body is not null`;
  return changed.length;
};

/**
 * The event log's copies (docs/api/events.md §Catch-up: GET /events) of the workspace's events that carry
 * the contact, redacted like the deliveries: a catch-up after the erasure never lists its data.
 */
const redactEventLog: Redaction = async (tx, e) => {
  const rows = await tx<{ id: string; type: string; body: string }[]>`
    select id, type, body from event_log
    where workspace_id = ${e.workspaceId} and strpos(body, ${e.contactId}) > 0`;
  return (await rewriteBodies(tx, "event_log", redacted(rows, e.contactId))).length;
};

/** The rows whose body carries the contact's data, each with its body redacted (erasure.ts). */
function redacted<R extends { type: string; body: string }>(rows: R[], contactId: string): R[] {
  return rows.flatMap((r) => {
    const body = redactBody(r.type, r.body, contactId);
    return body === undefined ? [] : [{ ...r, body }];
  });
}

/** Writes the redacted bodies back, by id, in one statement; returns the rows it was given. */
async function rewriteBodies<R extends { id: string; body: string }>(
  tx: TransactionSql,
  table: "deliveries" | "event_log",
  changed: R[],
): Promise<R[]> {
  if (changed.length === 0) return changed;
  await tx`
    update ${tx(table)} as t set body = c.body
    from unnest(${changed.map((c) => c.id)}::text[], ${changed.map((c) => c.body)}::text[]) as c(id, body)
    where t.id = c.id`;
  return changed;
}

/** Every table of the service that keeps what receivers are sent, redacted in one transaction. */
const REDACTIONS: Redaction[] = [redactDeliveries, redactEventLog];

export function erasureStore(sql: Sql) {
  return {
    /**
     * docs/api/contacts.md §POST /contacts/{id}/erase, the webhooks' part: the contact is remembered as erased and every
     * stored body that carries it is redacted. Once per event (the inbox); false when it was applied
     * before.
     */
    async erase(e: ContactErasure): Promise<boolean> {
      return sql.begin(async (tx) => {
        if (!(await firstDelivery(tx, CONSUMER, e.eventId))) return false;
        // Waits for the fan-outs in flight and holds new ones back (erasedBodies): a delivery is either
        // committed first, and redacted below, or written after, seeing the contact erased.
        await tx`lock table deliveries in share row exclusive mode`;
        await tx`
          insert into erased_contacts (workspace_id, contact_id, erased_at)
          values (${e.workspaceId}, ${e.contactId}, ${e.erasedAt})
          on conflict do nothing`;
        for (const redact of REDACTIONS) await redact(tx, e);
        return true;
      });
    },
  };
}
export type ErasureStore = ReturnType<typeof erasureStore>;

/**
 * The delivery bodies of a fan-out's events (`bodies`, in their order), in the fan-out's transaction: an event
 * about a contact erased before it was fanned out is stored redacted. The lock orders the fan-out
 * after an erasure in flight (erase above).
 */
export async function erasedBodies(
  tx: TransactionSql,
  events: EventEnvelope[],
  bodies: string[],
): Promise<string[]> {
  const about = events.map((e) => contactOf(e.type, e.data as Record<string, unknown> | undefined));
  if (about.every((c) => c === undefined)) return bodies;
  const asked = events.flatMap((e, i) => (about[i] ? [{ w: e.workspaceId, c: about[i] }] : []));
  // Sent together: the lock, then the read, pipelined on the transaction's connection.
  const [, rows] = await Promise.all([
    tx`lock table deliveries in row exclusive mode`,
    tx<{ key: string }[]>`
      select workspace_id || ' ' || contact_id as key from erased_contacts
      where (workspace_id, contact_id) in (
        select * from unnest(${asked.map((a) => a.w)}::text[], ${asked.map((a) => a.c)}::text[]))`,
  ]);
  const erased = new Set(rows.map((r) => r.key));
  if (erased.size === 0) return bodies;
  return bodies.map((body, i) => {
    const contact = about[i];
    const key = `${events[i]!.workspaceId} ${contact}`;
    return contact && erased.has(key) ? (redactBody(events[i]!.type, body, contact) ?? body) : body;
  });
}
