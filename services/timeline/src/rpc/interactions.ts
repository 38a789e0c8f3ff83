import type { ServiceImpl } from "@connectrpc/connect";
import { type InteractionService, ListInteractionsRequestSchema } from "@funil/contracts";
import { keysetPage, plainOf } from "@funil/rpc";
import { check, instant, listInteractionsQuery } from "@funil/schemas";
import type { InteractionFilters, InteractionRow, InteractionStore } from "../store/interactions.js";
import { interactionToProto } from "./wire.js";

const LIST = "interactions";

export function interactionService(deps: {
  interactions: InteractionStore;
}): ServiceImpl<typeof InteractionService> {
  return {
    async listInteractions(req) {
      const { cursor, limit, ...bound } = check(
        listInteractionsQuery,
        plainOf(ListInteractionsRequestSchema, req),
        "query",
      );
      const filters: InteractionFilters = {
        contactId: bound.contactId,
        userId: bound.userId,
        channels: bound.channel?.split(",").map((c) => c.trim()),
        direction: bound.direction,
        actor: bound.actor,
        createdAfter: instant(bound.createdAfter),
        createdBefore: instant(bound.createdBefore),
      };
      const { rows, nextCursor } = await keysetPage<InteractionRow>({
        list: LIST,
        workspaceId: req.workspaceId,
        filters: bound,
        cursor,
        limit,
        defaultLimit: 100,
        // One Date per page, for the next cursor.
        sortKey: (r) => new Date(r.createdAt),
        fetch: (take, after) => deps.interactions.list(req.workspaceId, filters, take, after),
      });
      return { data: rows.map(interactionToProto), nextCursor };
    },
  };
}
