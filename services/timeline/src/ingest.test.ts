import { DomainError } from "@funil/errors";
import { describe, expect, it } from "vitest";
import { type IngestItem, ingestItemOf, noteInteractionOf } from "./ingest.js";

const message = {
  workspaceId: "ws1",
  rowId: "r1",
  channel: "whatsapp",
  direction: "outbound",
  contactId: "ct1",
  conversationId: "cv1",
  conversationAssigneeUserId: "owner",
  channelInstanceId: "inst1",
  senderPhone: "+5511999990000",
  sentAt: "2024-03-01T09:30:00.123-03:00",
  preview: "hello",
};
const interaction = (item: IngestItem) => {
  if (item.kind !== "interaction") throw new Error(`not an interaction: ${item.kind}`);
  return item.interaction;
};
const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof DomainError ? { code: err.code, details: err.details } : err;
  }
  throw new Error("accepted");
};

describe("ingest: inbox messages (docs/api/interactions.md §Interaction, §Ingest)", () => {
  it("id msg:<rowId>, kind message, the channel and connection as sent", () => {
    expect(
      interaction(ingestItemOf("ingest.inbox.message", { ...message, senderUserId: "u1" })),
    ).toMatchObject({
      id: "msg:r1",
      kind: "message",
      channel: "whatsapp",
      actor: "user",
      userId: "u1",
      channelInstanceId: "inst1",
      senderPhone: "+5511999990000",
      conversationId: "cv1",
      opportunityId: null,
    });
  });

  it("rule 3: createdAt is the provider's send date; imported history keeps its original date", () => {
    expect(interaction(ingestItemOf("ingest.inbox.message", message)).createdAt.toISOString()).toBe(
      "2024-03-01T12:30:00.123Z",
    );
    const old = { ...message, imported: true, legacySource: "workflow", sentAt: "2015-06-01T00:00:00Z" };
    expect(interaction(ingestItemOf("ingest.inbox.message", old))).toMatchObject({
      createdAt: new Date("2015-06-01T00:00:00Z"),
      actor: "automation",
    });
  });

  it("rule 10: the conversation's assignee never becomes the sender (no stamp: unknown, userId null)", () => {
    const item = ingestItemOf("ingest.inbox.message", message);
    expect(interaction(item)).toMatchObject({ actor: "unknown", userId: null });
    // It is kept as the conversation's owner instead.
    expect(item.kind === "interaction" && item.assignment).toMatchObject({ assigneeUserId: "owner" });
  });

  it("rule 1: phone conversations (imported or opened by telephony) are inbox messages too", () => {
    expect(interaction(ingestItemOf("ingest.inbox.message", { ...message, channel: "phone" })).channel).toBe(
      "phone",
    );
  });

  it("rule 11: internal thread markers are excluded", () => {
    for (const marker of [
      "automation_ran",
      "meeting_canceled",
      "stage_changed",
      "agent_assigned",
      true,
      { x: 1 },
    ])
      expect(ingestItemOf("ingest.inbox.message", { ...message, marker }).kind).toBe("excluded");
    for (const marker of [null, false, ""])
      expect(ingestItemOf("ingest.inbox.message", { ...message, marker }).kind).toBe("interaction");
  });

  it("channelInstanceId and senderPhone are null when there is no connection", () => {
    const { channelInstanceId: _, ...noConnection } = message;
    expect(interaction(ingestItemOf("ingest.inbox.message", noConnection))).toMatchObject({
      channelInstanceId: null,
      senderPhone: null,
    });
  });

  it("a numeric rowId is an id too; unknown extra fields are ignored", () => {
    expect(interaction(ingestItemOf("ingest.inbox.message", { ...message, rowId: 42, extra: 1 })).id).toBe(
      "msg:42",
    );
  });

  it("a message against the contract is refused with every problem named", () => {
    expect(
      refused(() =>
        ingestItemOf("ingest.inbox.message", {
          ...message,
          channel: "sms",
          sentAt: "yesterday",
          contactId: "",
        }),
      ),
    ).toMatchObject({
      code: "validation_failed",
      details: expect.arrayContaining([
        expect.objectContaining({ path: "body.channel" }),
        expect.objectContaining({ path: "body.sentAt" }),
        expect.objectContaining({ path: "body.contactId" }),
      ]),
    });
    expect(refused(() => ingestItemOf("ingest.inbox.message", "text"))).toMatchObject({
      code: "validation_failed",
    });
    expect(refused(() => ingestItemOf("ingest.unknown", message))).toMatchObject({
      code: "validation_failed",
    });
  });
});

describe("ingest: calls, e-mails, reassignments, notes (docs/api/interactions.md §Ingest)", () => {
  const call = {
    workspaceId: "ws1",
    rowId: 7,
    contactId: "ct1",
    direction: "outbound",
    userId: "u1",
    startedAt: "2024-03-01T10:00:00Z",
    durationSec: 95,
    status: "answered",
  };

  it("a call: call:<rowId>, channel call, duration and raw status, no connection fields", () => {
    expect(interaction(ingestItemOf("ingest.call", { ...call, channelInstanceId: "x" }))).toMatchObject({
      id: "call:7",
      kind: "call",
      channel: "call",
      actor: "user",
      userId: "u1",
      durationSec: 95,
      status: "answered",
      channelInstanceId: null,
      senderPhone: null,
      createdAt: new Date("2024-03-01T10:00:00Z"),
    });
    expect(
      interaction(ingestItemOf("ingest.call", { ...call, userId: undefined, status: "ringing" })),
    ).toMatchObject({
      actor: "unknown",
      userId: null,
      status: "ringing",
    });
    expect(refused(() => ingestItemOf("ingest.call", { ...call, durationSec: -1 }))).toMatchObject({
      details: [expect.objectContaining({ path: "body.durationSec" })],
    });
  });

  const email = {
    workspaceId: "ws1",
    rowId: "e1",
    contactId: "ct1",
    sentAt: "2024-03-02T10:00:00Z",
    preview: "Re: proposal",
  };

  it("e-mails: a panel reply by its user, a contact reply by the contact, automation by automation", () => {
    expect(
      interaction(
        ingestItemOf("ingest.email", { ...email, direction: "outbound", kind: "panel_reply", userId: "u2" }),
      ),
    ).toMatchObject({ id: "email:e1", channel: "email", actor: "user", userId: "u2" });
    expect(
      interaction(ingestItemOf("ingest.email", { ...email, direction: "inbound", kind: "contact_reply" })),
    ).toMatchObject({ actor: "contact", userId: null });
    expect(
      interaction(
        ingestItemOf("ingest.email", { ...email, direction: "outbound", kind: "automation", userId: "u2" }),
      ),
    ).toMatchObject({ actor: "automation", userId: null });
  });

  it("rule 11: bulk e-mail campaigns are excluded", () => {
    expect(ingestItemOf("ingest.email", { ...email, direction: "outbound", kind: "campaign" }).kind).toBe(
      "excluded",
    );
  });

  it("a reassignment names the conversation's new owner and when", () => {
    expect(
      ingestItemOf("ingest.inbox.conversation_assigned", {
        workspaceId: "ws1",
        conversationId: "cv1",
        assigneeUserId: "u3",
        at: "2024-03-03T00:00:00Z",
      }),
    ).toEqual({
      kind: "assignment",
      assignment: {
        workspaceId: "ws1",
        conversationId: "cv1",
        assigneeUserId: "u3",
        at: new Date("2024-03-03Z"),
      },
    });
  });

  it("a note: note:<id>, outbound, channel note, actor user (its author), with its deal", () => {
    expect(
      noteInteractionOf({
        id: "evt1",
        type: "note.created",
        workspaceId: "ws1",
        occurredAt: "2024-03-04T00:00:00.000Z",
        data: {
          id: "note_1",
          contactId: "ct1",
          opportunityId: "deal1",
          body: "called, will buy",
          userId: "u4",
          createdAt: "2024-03-04T00:00:00.000Z",
        },
      }),
    ).toMatchObject({
      id: "note:note_1",
      kind: "note",
      channel: "note",
      direction: "outbound",
      actor: "user",
      userId: "u4",
      opportunityId: "deal1",
      preview: "called, will buy",
    });
  });
});
