/**
 * Who acted in an interaction (docs/api/interactions.md §The 12 rules of the timeline, rules 4–10 and 12):
 * one function for every source, so an inbox message, a call, an e-mail and a
 * note are judged by the same rules.
 */
export type Actor = "user" | "contact" | "ia" | "automation" | "system" | "api" | "unknown";
export type Direction = "inbound" | "outbound";
export type SenderKind = "user" | "ia" | "automation" | "system" | "api";

export interface Authorship {
  direction: Direction;
  /** The sender's user id stamped at send time; never the conversation's assignee (rule 10). */
  senderUserId?: string | null | undefined;
  /** The kind of sender the source stamped, when it did. */
  senderKind?: SenderKind | null | undefined;
  /** Where imported history came from in the legacy CRM (rule 8). */
  legacySource?: string | null | undefined;
}

/** Legacy sources that name an automated sender (docs/api/interactions.md §Ingest); any other value names nobody. */
const LEGACY_ACTORS = new Map<string, Actor>([
  ["workflow", "automation"],
  ["campaign", "automation"],
  ["bulk", "automation"],
  ["api", "api"],
]);

export function authorOf(a: Authorship): { actor: Actor; userId: string | null } {
  // Rule 5: whatever else the source says, an inbound interaction is the contact's.
  if (a.direction === "inbound") return { actor: "contact", userId: null };
  const userId = a.senderUserId || null;
  if (a.senderKind) {
    // Rule 4: user only when the sender's userId is recorded; a user stamp without one names nobody.
    if (a.senderKind === "user")
      return userId ? { actor: "user", userId } : { actor: "unknown", userId: null };
    // Rules 6 and 9: automated actors never carry a userId.
    return { actor: a.senderKind, userId: null };
  }
  // A userId stamp alone is the stamp of a team member.
  if (userId) return { actor: "user", userId };
  // Rule 8: without an author stamp, the legacy source may name an automated sender.
  const legacy = a.legacySource ? LEGACY_ACTORS.get(a.legacySource.trim().toLowerCase()) : undefined;
  if (legacy) return { actor: legacy, userId: null };
  // Rules 7 and 10: no known author.
  return { actor: "unknown", userId: null };
}
