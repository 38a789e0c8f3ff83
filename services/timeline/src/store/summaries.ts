import type { Sql } from "@funil/db";
import type { Activity, DealSeen } from "../activity.js";

export interface Touches {
  first: Date | null;
  last: Date | null;
}
const none: Touches = { first: null, last: null };

export function summaryStore(sql: Sql) {
  /** The contact's touches, one primary-key read of the summary kept on ingest. */
  async function contactTouches(workspaceId: string, contactId: string): Promise<Touches> {
    const [t] = await sql<{ firstAt: Date; lastAt: Date }[]>`
      select first_at, last_at from contact_touches
      where workspace_id = ${workspaceId} and contact_id = ${contactId}`;
    return t ? { first: t.firstAt, last: t.lastAt } : none;
  }

  /**
   * The contact's touches at or after `since` (a deal's creation, API.md §6).
   * The summary answers unless the contact's first touch came before `since`
   * and a later one after it: then one probe of the human-touch index finds
   * the first touch since.
   */
  async function touchesSince(workspaceId: string, contactId: string, since: Date): Promise<Touches> {
    const all = await contactTouches(workspaceId, contactId);
    if (!all.last || all.last < since) return none;
    if (all.first! >= since) return all;
    const [first] = await sql<{ createdAt: Date }[]>`
      select created_at from interactions
      where workspace_id = ${workspaceId} and contact_id = ${contactId} and actor = 'user'
        and created_at >= ${since}
      order by created_at limit 1`;
    return { first: first?.createdAt ?? all.last, last: all.last };
  }

  return {
    contactTouches,
    touchesSince,

    async deal(workspaceId: string, id: string): Promise<DealSeen | undefined> {
      const [d] = await sql<DealSeen[]>`
        select workspace_id, id, contact_id, created_at from deals where workspace_id = ${workspaceId} and id = ${id}`;
      return d;
    },

    /** The latest entry of the ledger for the deal (API.md §6), or null. */
    async lastActivity(workspaceId: string, opportunityId: string): Promise<Date | null> {
      const [row] = await sql<{ at: Date | null }[]>`
        select max(at) as at from activities
        where workspace_id = ${workspaceId} and opportunity_id = ${opportunityId}`;
      return row?.at ?? null;
    },

    /**
     * A domain event in the ledger, in one transaction: the deal it makes
     * known and its activity. Both are keyed (deal id, event id), so a
     * redelivered event changes nothing.
     */
    async record(item: { deal?: DealSeen; activity?: Activity }) {
      await sql.begin(async (tx) => {
        const { deal, activity } = item;
        if (deal)
          await tx`
            insert into deals (workspace_id, id, contact_id, created_at)
            values (${deal.workspaceId}, ${deal.id}, ${deal.contactId}, ${deal.createdAt})
            on conflict do nothing`;
        if (activity)
          await tx`
            insert into activities (event_id, workspace_id, opportunity_id, type, target_id, at)
            values (${activity.eventId}, ${activity.workspaceId}, ${activity.opportunityId}, ${activity.type},
                    ${activity.targetId}, ${activity.at})
            on conflict do nothing`;
      });
    },
  };
}
export type SummaryStore = ReturnType<typeof summaryStore>;
