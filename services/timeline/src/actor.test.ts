import { describe, expect, it } from "vitest";
import { authorOf } from "./actor.js";

describe("authorOf (docs/api/interactions.md §Interaction)", () => {
  it("rule 4: actor=user when the sender's userId is recorded", () => {
    expect(authorOf({ direction: "outbound", senderUserId: "u1" })).toEqual({ actor: "user", userId: "u1" });
    expect(authorOf({ direction: "outbound", senderKind: "user", senderUserId: "u1" })).toEqual({
      actor: "user",
      userId: "u1",
    });
  });

  it("rule 4: a user stamp without a userId is not a user (unknown, userId null)", () => {
    expect(authorOf({ direction: "outbound", senderKind: "user" })).toEqual({
      actor: "unknown",
      userId: null,
    });
    expect(authorOf({ direction: "outbound", senderKind: "user", senderUserId: "" })).toEqual({
      actor: "unknown",
      userId: null,
    });
  });

  it("rule 5: every inbound interaction is the contact's, whatever the stamps say", () => {
    expect(authorOf({ direction: "inbound" })).toEqual({ actor: "contact", userId: null });
    expect(
      authorOf({ direction: "inbound", senderUserId: "u1", senderKind: "user", legacySource: "workflow" }),
    ).toEqual({ actor: "contact", userId: null });
  });

  it("rule 6: ia, automation, system and api are the automated actors the stamp names", () => {
    for (const kind of ["ia", "automation", "system", "api"] as const)
      expect(authorOf({ direction: "outbound", senderKind: kind })).toEqual({ actor: kind, userId: null });
  });

  it("rule 7: an outbound message with no known author is unknown", () => {
    expect(authorOf({ direction: "outbound" })).toEqual({ actor: "unknown", userId: null });
  });

  it("rule 8: imported history without a stamp: workflow, campaign, bulk → automation; api → api", () => {
    for (const legacySource of ["workflow", "campaign", "bulk"])
      expect(authorOf({ direction: "outbound", legacySource })).toEqual({
        actor: "automation",
        userId: null,
      });
    expect(authorOf({ direction: "outbound", legacySource: "api" })).toEqual({ actor: "api", userId: null });
  });

  it("rule 8: an unrecognised legacy source (or a name of Object.prototype) gives unknown", () => {
    for (const legacySource of ["hubspot", "", "constructor", "toString"])
      expect(authorOf({ direction: "outbound", legacySource })).toEqual({ actor: "unknown", userId: null });
  });

  it("rule 8: a stamp wins over the legacy source", () => {
    expect(authorOf({ direction: "outbound", senderUserId: "u9", legacySource: "workflow" })).toEqual({
      actor: "user",
      userId: "u9",
    });
    expect(authorOf({ direction: "outbound", senderKind: "ia", legacySource: "api" })).toEqual({
      actor: "ia",
      userId: null,
    });
  });

  it("rule 9: userId is filled only when actor=user (an automated sender's userId is dropped)", () => {
    expect(authorOf({ direction: "outbound", senderKind: "automation", senderUserId: "u1" })).toEqual({
      actor: "automation",
      userId: null,
    });
    expect(authorOf({ direction: "outbound", senderKind: "ia", senderUserId: "u1" })).toEqual({
      actor: "ia",
      userId: null,
    });
  });

  it("rule 10: without a stamp, userId is null and actor unknown (nothing else can fill it)", () => {
    expect(
      authorOf({ direction: "outbound", senderUserId: null, senderKind: null, legacySource: null }),
    ).toEqual({ actor: "unknown", userId: null });
  });

  it("rule 12: an outbound message stamped by a user is what speed-to-lead counts", () => {
    const a = authorOf({ direction: "outbound", senderUserId: "u1" });
    expect([a.actor, "outbound"]).toEqual(["user", "outbound"]);
    expect(authorOf({ direction: "inbound", senderUserId: "u1" }).actor).not.toBe("user");
  });
});
