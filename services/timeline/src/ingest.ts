import { fail } from "@funil/errors";
import { check, INGEST_MESSAGES, INGEST_SUBJECTS, noteEnvelope } from "@funil/schemas";
import { type Actor, authorOf, type Direction } from "./actor.js";

/** An interaction as the timeline stores it (docs/api/interactions.md §Interaction). */
export interface InteractionRecord {
  workspaceId: string;
  id: string;
  kind: "message" | "call" | "email" | "note";
  channel: string;
  direction: Direction;
  actor: Actor;
  userId: string | null;
  contactId: string;
  opportunityId: string | null;
  conversationId: string | null;
  channelInstanceId: string | null;
  senderPhone: string | null;
  createdAt: Date;
  durationSec: number | null;
  status: string | null;
  preview: string | null;
}

/** A change of a conversation's current owner, observed at `at`. */
export interface Assignment {
  workspaceId: string;
  conversationId: string;
  assigneeUserId: string | null;
  at: Date;
}

/** What one ingest message asks of the timeline. */
export type IngestItem =
  | { kind: "interaction"; interaction: InteractionRecord; assignment?: Assignment }
  | { kind: "assignment"; assignment: Assignment }
  | { kind: "excluded"; reason: string };

/** A marker is set when it holds anything but null, false or an empty string. */
const isSet = (v: unknown) => v !== undefined && v !== null && v !== false && v !== "";
const PREVIEW_MAX = 500;
const clip = (text: string | null | undefined) => (text == null ? null : text.slice(0, PREVIEW_MAX));

/**
 * Turns one ingest message into what the timeline stores. A message that
 * breaks the contract throws validation_failed naming every problem;
 * internal thread markers and bulk campaigns are excluded (rule 11).
 */
export function ingestItemOf(subject: string, payload: unknown): IngestItem {
  switch (subject) {
    case INGEST_SUBJECTS.message:
      return messageItemOf(payload);
    case INGEST_SUBJECTS.call:
      return callItemOf(payload);
    case INGEST_SUBJECTS.email:
      return emailItemOf(payload);
    case INGEST_SUBJECTS.assigned:
      return assignmentItemOf(payload);
    default:
      throw fail("validation_failed", `no ingest subject ${subject}`);
  }
}

/** An inbox message: an interaction, and the assignment it shows, unless it is an internal thread marker. */
function messageItemOf(payload: unknown): IngestItem {
  const m = check(INGEST_MESSAGES[INGEST_SUBJECTS.message], payload, "body");
  if (isSet(m.marker)) return { kind: "excluded", reason: "internal thread marker" };
  // Rule 10: the assignee is the conversation's owner, never the sender; it is not passed on.
  const author = authorOf({
    direction: m.direction,
    senderUserId: m.senderUserId,
    senderKind: m.senderKind,
    legacySource: m.legacySource,
  });
  // No connection, no sender number: both null together.
  const channelInstanceId = m.channelInstanceId ?? null;
  return {
    kind: "interaction",
    interaction: {
      workspaceId: m.workspaceId,
      id: `msg:${m.rowId}`,
      kind: "message",
      channel: m.channel,
      direction: m.direction,
      ...author,
      contactId: m.contactId,
      opportunityId: null,
      conversationId: m.conversationId,
      channelInstanceId,
      senderPhone: channelInstanceId ? (m.senderPhone ?? null) : null,
      // Rule 3: the provider's send date, also for imported history.
      createdAt: m.sentAt,
      durationSec: null,
      status: null,
      preview: clip(m.preview),
    },
    // The message shows who owned the conversation when it was sent.
    assignment:
      m.conversationAssigneeUserId === undefined
        ? undefined
        : {
            workspaceId: m.workspaceId,
            conversationId: m.conversationId,
            assigneeUserId: m.conversationAssigneeUserId,
            at: m.sentAt,
          },
  };
}

/** A call: always an interaction. */
function callItemOf(payload: unknown): IngestItem {
  const c = check(INGEST_MESSAGES[INGEST_SUBJECTS.call], payload, "body");
  return {
    kind: "interaction",
    interaction: {
      ...notInbox(c.workspaceId, c.contactId),
      id: `call:${c.rowId}`,
      kind: "call",
      channel: "call",
      direction: c.direction,
      ...authorOf({ direction: c.direction, senderUserId: c.userId }),
      createdAt: c.startedAt,
      durationSec: c.durationSec,
      status: c.status,
      preview: clip(c.preview),
    },
  };
}

/** An e-mail: an interaction, unless it is a bulk campaign. */
function emailItemOf(payload: unknown): IngestItem {
  const e = check(INGEST_MESSAGES[INGEST_SUBJECTS.email], payload, "body");
  if (e.kind === "campaign") return { kind: "excluded", reason: "bulk e-mail campaign" };
  return {
    kind: "interaction",
    interaction: {
      ...notInbox(e.workspaceId, e.contactId),
      id: `email:${e.rowId}`,
      kind: "email",
      channel: "email",
      direction: e.direction,
      ...authorOf({
        direction: e.direction,
        senderUserId: e.userId,
        senderKind: e.kind === "automation" ? "automation" : undefined,
      }),
      createdAt: e.sentAt,
      durationSec: null,
      status: null,
      preview: clip(e.preview),
    },
  };
}

/** A conversation's new assignee. */
function assignmentItemOf(payload: unknown): IngestItem {
  const a = check(INGEST_MESSAGES[INGEST_SUBJECTS.assigned], payload, "body");
  return {
    kind: "assignment",
    assignment: {
      workspaceId: a.workspaceId,
      conversationId: a.conversationId,
      assigneeUserId: a.assigneeUserId ?? null,
      at: a.at,
    },
  };
}

/** A note (crm's note.created): outbound, channel note, by its author (docs/api/interactions.md §Ingest). */
export function noteInteractionOf(envelope: unknown): InteractionRecord {
  const { workspaceId, data: n } = check(noteEnvelope, envelope, "body");
  return {
    ...notInbox(workspaceId, n.contactId),
    id: `note:${n.id}`,
    kind: "note",
    channel: "note",
    direction: "outbound",
    ...authorOf({ direction: "outbound", senderKind: "user", senderUserId: n.userId }),
    opportunityId: n.opportunityId ?? null,
    createdAt: n.createdAt,
    durationSec: null,
    status: null,
    preview: clip(n.body),
  };
}

/** Fields that only inbox messages have: null for every other source. */
function notInbox(workspaceId: string, contactId: string) {
  return {
    workspaceId,
    contactId,
    opportunityId: null,
    conversationId: null,
    channelInstanceId: null,
    senderPhone: null,
  };
}
