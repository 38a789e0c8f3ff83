import { check, parseTimestamp, timestamp, z } from "@funil/schemas";

/** A deal as the timeline knows it: its contact and creation time (the start of its touches). */
export interface DealSeen {
  workspaceId: string;
  id: string;
  contactId: string;
  createdAt: Date;
}

/** One entry of the activity ledger: an action on a deal or one of its notes, tasks or meetings. */
export interface Activity {
  eventId: string;
  workspaceId: string;
  opportunityId: string;
  type: string;
  targetId: string;
  at: Date;
}

const id = z.string().min(1).max(200);
const at = timestamp.transform((v) => parseTimestamp(v)!);
// Only what the ledger reads is checked: events it does not use may carry anything.
const envelope = z.object({
  id,
  type: z.string().min(1).max(100),
  workspaceId: id,
  occurredAt: at,
  data: z.record(z.string(), z.unknown()),
});
const dealData = z.object({ id, contactId: id, createdAt: at });
const activityData = z.object({ id, opportunityId: id.nullable().optional() });

/**
 * What a domain event means for the ledger (docs/api/deals.md §GET /opportunities/{id}; docs/api/interactions.md §Activity ledger). Every event
 * about a deal is an action on it except its creation, which only makes
 * the deal known; task, note and meeting events count for the deal they
 * belong to. Other events (contacts, pipelines…) mean nothing here.
 */
export function ledgerItemOf(event: unknown): { deal?: DealSeen; activity?: Activity } {
  const e = check(envelope, event, "body");
  const [resource] = e.type.split(".");
  if (resource === "opportunity") {
    const d = check(dealData, e.data, "body");
    const deal = { workspaceId: e.workspaceId, id: d.id, contactId: d.contactId, createdAt: d.createdAt };
    if (e.type === "opportunity.created") return { deal };
    return { deal, activity: activityOf(e, d.id, d.id) };
  }
  if (resource === "task" || resource === "note" || resource === "meeting") {
    const a = check(activityData, e.data, "body");
    if (a.opportunityId) return { activity: activityOf(e, a.opportunityId, a.id) };
  }
  return {};
}

function activityOf(e: z.output<typeof envelope>, opportunityId: string, targetId: string): Activity {
  return {
    eventId: e.id,
    workspaceId: e.workspaceId,
    opportunityId,
    type: e.type,
    targetId,
    at: e.occurredAt,
  };
}
