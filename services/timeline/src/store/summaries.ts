import { coalescedReads, keyRows, type Sql } from "@funil/db";
import type postgres from "postgres";
import type { Activity, DealSeen } from "../activity.js";

export interface Touches {
  first: Date | null;
  last: Date | null;
}
const none: Touches = { first: null, last: null };

interface TouchRow {
  workspaceId: string;
  id: string;
  firstAt: Date;
  lastAt: Date;
}

/** A deal's row of dealSummary's statement: every column null when the deal is not known. */
interface DealRow {
  workspaceId: string;
  id: string;
  contactId: string | null;
  createdAt: Date | null;
  firstAt: Date | null;
  lastAt: Date | null;
  lastActivity: Date | null;
}

export function summaryStore(sql: Sql) {
  /** A contact's summary kept on ingest, by primary key; the reads of one RPC batch in one statement. */
  const touchRow = coalescedReads<TouchRow>(sql, {
    async one(workspaceId, contactId) {
      const [t] = await sql<TouchRow[]>`
        select workspace_id, contact_id as id, first_at, last_at from contact_touches
        where workspace_id = ${workspaceId} and contact_id = ${contactId}`;
      return t;
    },
    many: (keys) => sql<TouchRow[]>`
      select workspace_id, contact_id as id, first_at, last_at from contact_touches
      where (workspace_id, contact_id) in ${keys}`,
  });

  /** The contact's touches (null = none). */
  async function contactTouches(workspaceId: string, contactId: string): Promise<Touches> {
    const t = await touchRow(workspaceId, contactId);
    return t ? { first: t.firstAt, last: t.lastAt } : none;
  }

  /**
   * A deal's row for its single read: the deal as opportunity.created made it known, its contact's
   * summary and the latest entry of its ledger, in one statement (the reads of one RPC batch together);
   * `keys`: the deals (keyRows); `contactId` stands in for the deal's contact while the deal is not
   * known yet (null when the caller does not give one).
   */
  const dealStatement = (keys: postgres.Fragment, contactId: string | null) => sql<DealRow[]>`
    select k.workspace_id, k.id, d.contact_id, d.created_at, t.first_at, t.last_at,
      (select max(at) from activities a
       where a.workspace_id = k.workspace_id and a.opportunity_id = k.id) as last_activity
    from ${keys} as k(workspace_id, id)
    left join deals d on d.workspace_id = k.workspace_id and d.id = k.id
    left join contact_touches t on t.workspace_id = k.workspace_id
      and t.contact_id = coalesce(d.contact_id, ${contactId}::text)`;
  const dealRow = coalescedReads<DealRow>(sql, {
    one: async (workspaceId, id) => (await dealStatement(keyRows(sql, [{ workspaceId, id }]), null))[0],
    many: (keys) => dealStatement(keys, null),
  });

  /**
   * The contact's touches at or after `since` (a deal's creation, docs/api/deals.md §GET /opportunities/{id}), from the contact's summary
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
     * What a deal's single read needs (docs/api/deals.md §GET /opportunities/{id}), in one statement: whether the deal is known (from
     * opportunity.created), its contact's touches since the deal's creation, and the latest entry of its
     * ledger (null = none). A deal not known yet is read for the contact and creation the caller gives.
     */
    async dealSummary(
      workspaceId: string,
      opportunityId: string,
      given?: { contactId: string; createdAt: Date },
    ): Promise<{ known: boolean; touches?: Touches; lastActivity: Date | null }> {
      const r = given
        ? (await dealStatement(keyRows(sql, [{ workspaceId, id: opportunityId }]), given.contactId))[0]
        : await dealRow(workspaceId, opportunityId);
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
