import { firstDelivery, forgetAnswers, type Sql, type TransactionSql } from "@funil/db";
import { invalidReference } from "@funil/errors";
import type { ContactErasure } from "@funil/schemas";
import { noContact } from "../booking.js";

/** The inbox name of the erasures applied from contact.erased. */
const CONSUMER = "scheduling-erasures";

/**
 * The advisory lock key of one contact of one workspace, for the rest of the transaction: its erasure
 * takes it alone, the bookings that copy its name onto a new meeting share it (mustNotBeErased).
 */
const contactKey = (tx: TransactionSql, workspaceId: string, contactId: string) =>
  tx`hashtextextended(${`contact:${workspaceId}:${contactId}`}, 0)`;

/**
 * In a booking's transaction, before its meeting is written. crm was asked about the contact before the
 * transaction opened, so its answer may predate an erasure: the booking waits for an erasure of the
 * contact in flight (bookings of one contact share the lock, so they never wait for each other), then
 * refuses a contact erased as crm refuses it now (422 invalid_reference, contactId). Under READ COMMITTED
 * every statement reads what was committed when it starts: the read after the lock sees the erasure that
 * held it. Sent together, one round trip; PostgreSQL runs them in order.
 */
export async function mustNotBeErased(tx: TransactionSql, workspaceId: string, contactId: string) {
  const [, erased] = await Promise.all([
    tx`select pg_advisory_xact_lock_shared(${contactKey(tx, workspaceId, contactId)})`,
    tx`select 1 from erased_contacts where workspace_id = ${workspaceId} and contact_id = ${contactId}`,
  ]);
  if (erased.length > 0) throw invalidReference([noContact(contactId)]);
}

export function erasureStore(sql: Sql) {
  return {
    /**
     * docs/api/contacts.md §POST /contacts/{id}/erase, scheduling's part: the contact's name copied onto its meetings
     * and their free texts go (the meetings stay, with their times, assignee and outcome), a
     * remembered answer about one of them replays 404, and the contact is remembered as erased, so a
     * booking of it is refused (mustNotBeErased). Once per event (the inbox); false when it was applied
     * before. Erasures are rare: the workspace's meetings are scanned rather than indexed by contact for
     * every booking.
     */
    async erase(e: ContactErasure): Promise<boolean> {
      return sql.begin(async (tx) => {
        if (!(await firstDelivery(tx, CONSUMER, e.eventId))) return false;
        // Waits for the contact's bookings in flight and holds new ones back: a meeting is either
        // committed first, and redacted below (under READ COMMITTED the update, a statement started
        // after the lock, sees it), or booked after, and refused.
        await tx`select pg_advisory_xact_lock(${contactKey(tx, e.workspaceId, e.contactId)})`;
        await tx`
          insert into erased_contacts (workspace_id, contact_id, erased_at)
          values (${e.workspaceId}, ${e.contactId}, ${e.erasedAt})
          on conflict do nothing`;
        await tx`
          update appointments
          set contact_name = null, title = null, location = null, conference_url = null, cancel_reason = null
          where workspace_id = ${e.workspaceId} and contact_id = ${e.contactId}
            and (contact_name is not null or title is not null or location is not null
                 or conference_url is not null or cancel_reason is not null)`;
        await forgetAnswers(
          tx,
          e.workspaceId,
          [{ ok: { contactId: e.contactId } }, { ok: { appointment: { contactId: e.contactId } } }],
          { code: "not_found", message: "appointment not found" },
        );
        return true;
      });
    },
  };
}
export type ErasureStore = ReturnType<typeof erasureStore>;
