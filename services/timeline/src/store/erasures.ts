import { firstDelivery, type Sql } from "@funil/db";
import type { ContactErasure } from "@funil/schemas";

/** The inbox name of the erasures applied from contact.erased. */
const CONSUMER = "timeline-erasures";

export function erasureStore(sql: Sql) {
  return {
    /**
     * docs/api/contacts.md §POST /contacts/{id}/erase, the timeline's part: the preview and sender phone of every
     * interaction of the contact and its human-touch summary go; the contact is remembered as erased,
     * so what is ingested for it later is stored without them. Once per event (the inbox); false when
     * it was applied before.
     */
    async erase(e: ContactErasure): Promise<boolean> {
      return sql.begin(async (tx) => {
        if (!(await firstDelivery(tx, CONSUMER, e.eventId))) return false;
        // Ingest's inserts wait while this runs, and this waits for theirs: an interaction stored at
        // the same moment is either committed first, and erased below, or stored after, and sees the
        // contact erased.
        await tx`lock table interactions in share row exclusive mode`;
        await tx`
          insert into erased_contacts (workspace_id, contact_id, erased_at)
          values (${e.workspaceId}, ${e.contactId}, ${e.erasedAt})
          on conflict do nothing`;
        await tx`
          update interactions set preview = null, sender_phone = null
          where workspace_id = ${e.workspaceId} and contact_id = ${e.contactId}
            and (preview is not null or sender_phone is not null)`;
        await tx`delete from contact_touches where workspace_id = ${e.workspaceId} and contact_id = ${e.contactId}`;
        return true;
      });
    },
  };
}
export type ErasureStore = ReturnType<typeof erasureStore>;
