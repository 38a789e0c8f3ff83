/**
 * Speed to lead: for each contact created in a period, the time until a team member first wrote or
 * called them. Only what a person did counts: `/interactions` with direction=outbound and actor=user
 * (docs/api/interactions.md, rule 12); automations, the AI and inbound messages never do.
 */
import type { Funil } from "@funil/client";

export interface LeadRow {
  contactId: string;
  name: string | null;
  createdAt: string;
  firstTouchAt: string | null;
  /** Seconds from creation to the first touch; null when nobody has touched the lead yet. */
  seconds: number | null;
}

export interface SpeedToLead {
  rows: LeadRow[];
  medianSeconds: number | null;
  untouched: number;
}

export async function speedToLead(opts: {
  funil: Funil;
  since: Date;
  pageSize?: number;
}): Promise<SpeedToLead> {
  const since = opts.since.toISOString();
  const firstTouch = new Map<string, string>();
  const touches = opts.funil.list("listInteractions", {
    params: { query: { direction: "outbound", actor: "user", createdAfter: since } },
    pageSize: opts.pageSize ?? 500,
  });
  // Newest first: the last one seen for a contact is its earliest.
  for await (const i of touches) firstTouch.set(i.contactId, i.createdAt);
  const rows: LeadRow[] = [];
  const contacts = opts.funil.list("listContacts", {
    params: { query: { createdAfter: since } },
    pageSize: opts.pageSize ?? 500,
  });
  for await (const c of contacts) {
    const touch = firstTouch.get(c.id);
    const seconds = touch ? (Date.parse(touch) - Date.parse(c.createdAt)) / 1000 : null;
    rows.push({
      contactId: c.id,
      name: c.name,
      createdAt: c.createdAt,
      firstTouchAt: touch ?? null,
      seconds: seconds !== null && seconds >= 0 ? seconds : null,
    });
  }
  const times = rows.flatMap((r) => (r.seconds === null ? [] : [r.seconds])).sort((a, b) => a - b);
  const mid = Math.floor(times.length / 2);
  const medianSeconds =
    times.length === 0 ? null : times.length % 2 ? times[mid]! : (times[mid - 1]! + times[mid]!) / 2;
  return { rows, medianSeconds, untouched: rows.filter((r) => r.seconds === null).length };
}
