import { z } from "zod";
import { timestamp } from "./common.js";
import { parseTimestamp } from "./time.js";

/**
 * The messages the inbox, telephony and e-mail systems publish on INGEST (docs/api/interactions.md
 * §Ingest), one schema per subject: the timeline checks every message with them, and the AsyncAPI
 * document (the gateway's asyncapi.ts) describes the subjects from them. Producers may add fields:
 * unknown keys are ignored, known ones are checked.
 */

const id = z.string().min(1, "must not be empty").max(200, "at most 200 characters");
/** Row ids of the sources' databases: strings, or integers as they often are there. */
const rowId = z.union([id, z.number().int().nonnegative()]).transform(String);
const optionalId = id.nullable().optional();
const direction = z.enum(["inbound", "outbound"], { message: "direction is inbound or outbound" });
const preview = z.string().max(100_000, "at most 100000 characters").nullable().optional();
const at = timestamp.transform((v) => parseTimestamp(v)!);

const inboxMessage = z
  .object({
    workspaceId: id,
    rowId,
    channel: z.enum(["whatsapp", "instagram", "facebook", "phone"], {
      message: "channel is whatsapp, instagram, facebook or phone",
    }),
    direction,
    contactId: id,
    conversationId: id,
    conversationAssigneeUserId: optionalId,
    channelInstanceId: optionalId,
    senderPhone: z.string().max(200, "at most 200 characters").nullable().optional(),
    sentAt: at,
    senderUserId: optionalId,
    senderKind: z
      .enum(["user", "ia", "automation", "system", "api"], {
        message: "senderKind is user, ia, automation, system or api",
      })
      .nullable()
      .optional(),
    imported: z.boolean().nullable().optional(),
    legacySource: z.string().max(200, "at most 200 characters").nullable().optional(),
    marker: z.unknown().optional(),
    preview,
  })
  .describe("a message of a conversation of the inbox (WhatsApp, Instagram, Facebook, phone)");

const call = z
  .object({
    workspaceId: id,
    rowId,
    contactId: id,
    direction,
    userId: optionalId,
    startedAt: at,
    durationSec: z.number().int("durationSec is an integer").nonnegative("durationSec is not negative"),
    status: z.string().min(1, "must not be empty").max(100, "at most 100 characters"),
    preview,
  })
  .describe("a call from the telephony system");

const email = z
  .object({
    workspaceId: id,
    rowId,
    contactId: id,
    direction,
    kind: z.enum(["panel_reply", "contact_reply", "automation", "campaign"], {
      message: "kind is panel_reply, contact_reply, automation or campaign",
    }),
    userId: optionalId,
    sentAt: at,
    preview,
  })
  .describe("an e-mail; kind campaign (bulk) is never shown");

const conversationAssigned = z
  .object({
    workspaceId: id,
    conversationId: id,
    assigneeUserId: optionalId,
    at,
  })
  .describe("a conversation's current owner changes");

/** The subjects of docs/api/interactions.md §Ingest, without the FUNIL_ENV prefix. */
export const INGEST_SUBJECTS = {
  message: "ingest.inbox.message",
  assigned: "ingest.inbox.conversation_assigned",
  call: "ingest.call",
  email: "ingest.email",
} as const;

/** Each ingest subject's message. */
export const INGEST_MESSAGES = {
  [INGEST_SUBJECTS.message]: inboxMessage,
  [INGEST_SUBJECTS.assigned]: conversationAssigned,
  [INGEST_SUBJECTS.call]: call,
  [INGEST_SUBJECTS.email]: email,
} as const;

/** crm's note as note.created carries it (the note as POST /notes returns it). */
export const noteEnvelope = z.object({
  workspaceId: id,
  data: z.object({
    id,
    contactId: id,
    opportunityId: optionalId,
    body: z.string(),
    userId: id,
    createdAt: at,
  }),
});

/** The subject under which a refused message is kept, inside the INGEST stream (never consumed). */
export const ingestDeadSubject = (subject: string) => `ingest.dead.${subject}`;

/**
 * What the timeline keeps on `ingest.dead.<subject>` for a message it refuses (docs/api/interactions.md
 * §Ingest): its subject, stream sequence, the reason, the problems of a message against the contract,
 * and the message as it came, as text.
 */
export const ingestDeadLetter = z
  .object({
    subject: z.string().describe("the refused message's subject, without the FUNIL_ENV prefix"),
    seq: z.number().int().positive().describe("its sequence in the stream"),
    reason: z.string(),
    details: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe("one entry per problem; absent when the message is not JSON"),
    payload: z.string().describe("the refused message as it came"),
  })
  .describe("a message the timeline refused, kept with the reason");
export type IngestDeadLetter = z.input<typeof ingestDeadLetter>;
