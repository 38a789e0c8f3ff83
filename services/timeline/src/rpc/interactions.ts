import type { ServiceImpl } from "@connectrpc/connect";
import { type InteractionService, ListInteractionsRequestSchema } from "@funil/contracts";
import { keysetList } from "@funil/db";
import { plainOf } from "@funil/rpc";
import { instant, listInteractionsQuery } from "@funil/schemas";
import type { InteractionRow, InteractionStore } from "../store/interactions.js";
import { interactionToProto } from "./wire.js";

const LIST = "interactions";

export function interactionService(deps: {
  interactions: InteractionStore;
}): ServiceImpl<typeof InteractionService> {
  const list = keysetList({
    list: LIST,
    query: listInteractionsQuery,
    defaultLimit: 100,
    // One Date per page, for the next cursor.
    sortKey: (r: InteractionRow) => new Date(r.createdAt),
    fetch: (workspaceId, bound, take, after) =>
      deps.interactions.list(
        workspaceId,
        {
          contactId: bound.contactId,
          userId: bound.userId,
          channels: bound.channel?.split(",").map((c) => c.trim()),
          direction: bound.direction,
          actor: bound.actor,
          createdAfter: instant(bound.createdAfter),
          createdBefore: instant(bound.createdBefore),
        },
        take,
        after,
      ),
    toMessage: interactionToProto,
  });
  return {
    listInteractions: (req) => list(req.workspaceId, plainOf(ListInteractionsRequestSchema, req)),
  };
}
