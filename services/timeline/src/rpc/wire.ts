import { create } from "@bufbuild/protobuf";
import { type Interaction, TouchesSchema } from "@funil/contracts";
import { isoString } from "@funil/schemas";
import type { InteractionRow } from "../store/interactions.js";
import type { Touches } from "../store/summaries.js";

/** Records as the contracts' messages: a record's null is an unset optional field on the wire. */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

/**
 * A page's interaction as a literal with its $typeName rather than through create(), which walks the
 * descriptor for every field of every row; a literal is the same message to every encoder (an unset
 * optional field is undefined). Its createdAt is already the API's text (store/interactions.ts).
 */
export const interactionToProto = (r: InteractionRow): Interaction => ({
  $typeName: "funil.timeline.v1.Interaction",
  id: r.id,
  kind: r.kind,
  channel: r.channel,
  direction: r.direction,
  actor: r.actor,
  userId: absent(r.userId),
  contactId: r.contactId,
  opportunityId: absent(r.opportunityId),
  conversationId: absent(r.conversationId),
  conversationAssigneeUserId: absent(r.conversationAssigneeUserId),
  channelInstanceId: absent(r.channelInstanceId),
  senderPhone: absent(r.senderPhone),
  createdAt: r.createdAt,
  durationSec: absent(r.durationSec),
  status: absent(r.status),
  preview: absent(r.preview),
});

export const touchesToProto = (t: Touches) =>
  create(TouchesSchema, { firstHumanTouchAt: isoString(t.first), lastHumanTouchAt: isoString(t.last) });
