import { firstDelivery, forgetAnswers, type Sql } from "@funil/db";
import type { ContactErasure } from "@funil/schemas";

/** The inbox name of the erasures applied from contact.erased. */
const CONSUMER = "scheduling-erasures";

export function erasureStore(sql: Sql) {
  return {
    /**
     * docs/api/contacts.md §POST /contacts/{id}/erase, scheduling's part: the contact's name copied onto its meetings
     * and their free texts go (the meetings stay, with their times, assignee and outcome), and a
     * remembered answer about one of them replays 404. Once per event (the inbox); false when it was
     * applied before. Erasures are rare: the workspace's meetings are scanned rather than indexed by
     * contact for every booking.
     */
    async erase(e: ContactErasure): Promise<boolean> {
      return sql.begin(async (tx) => {
        if (!(await firstDelivery(tx, CONSUMER, e.eventId))) return false;
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
