import { create } from "@bufbuild/protobuf";
import { InteractionSchema, TouchesSchema } from "@funil/contracts";
import { isoString } from "@funil/schemas";
import type { InteractionRow } from "../store/interactions.js";
import type { Touches } from "../store/summaries.js";

/** Records as the contracts' messages: a record's null is an unset optional field on the wire. */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export const interactionToProto = (r: InteractionRow) =>
  create(InteractionSchema, {
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
    createdAt: isoString(r.createdAt),
    durationSec: absent(r.durationSec),
    status: absent(r.status),
    preview: absent(r.preview),
  });

export const touchesToProto = (t: Touches) =>
  create(TouchesSchema, { firstHumanTouchAt: isoString(t.first), lastHumanTouchAt: isoString(t.last) });
