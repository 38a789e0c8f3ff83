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
   * The contact's touches at or after `since` (a deal's creation, API.md §6), from the contact's summary
   * `all`: it answers unless the contact's first touch came before `since` and a later one after it; then
   * one probe of the human-touch index finds the first touch since.
   */
  async function touchesSince(
    workspaceId: string,
    contactId: string,
    since: Date,
    all: Touches,
  ): Promise<Touches> {
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

    /**
     * What a deal's single read needs (API.md §6), in one statement: whether the deal is known (from
     * opportunity.created), its contact's touches since the deal's creation, and the latest entry of its
     * ledger (null = none). A deal not known yet is read for the contact and creation the caller gives.
     */
    async dealSummary(
      workspaceId: string,
      opportunityId: string,
      given?: { contactId: string; createdAt: Date },
    ): Promise<{ known: boolean; touches?: Touches; lastActivity: Date | null }> {
      const [r] = await sql<
        {
          contactId: string | null;
          createdAt: Date | null;
          firstAt: Date | null;
          lastAt: Date | null;
          lastActivity: Date | null;
        }[]
      >`
        select d.contact_id, d.created_at, t.first_at, t.last_at,
          (select max(at) from activities a
           where a.workspace_id = ${workspaceId} and a.opportunity_id = ${opportunityId}) as last_activity
        from (values (1)) as one
        left join deals d on d.workspace_id = ${workspaceId} and d.id = ${opportunityId}
        left join contact_touches t on t.workspace_id = ${workspaceId}
          and t.contact_id = coalesce(d.contact_id, ${given?.contactId ?? null}::text)`;
      const known = r!.contactId !== null;
      const deal = known ? { contactId: r!.contactId!, createdAt: r!.createdAt! } : given;
      const all: Touches = r!.firstAt ? { first: r!.firstAt, last: r!.lastAt } : none;
      return {
        known,
        touches: deal && (await touchesSince(workspaceId, deal.contactId, deal.createdAt, all)),
        lastActivity: r!.lastActivity,
      };
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
