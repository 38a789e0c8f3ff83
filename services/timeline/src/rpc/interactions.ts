import type { ServiceImpl } from "@connectrpc/connect";
import {
  type InteractionService,
  ListInteractionsRequestSchema,
  ListInteractionsResponseSchema,
} from "@funil/contracts";
import type { FiltersOf } from "@funil/db";
import { plainOf, rowList } from "@funil/rpc";
import { instant, listInteractionsQuery } from "@funil/schemas";
import type { InteractionRow, InteractionStore } from "../store/interactions.js";
import { interactionToProto } from "./wire.js";

const LIST = "interactions";

export function interactionService(deps: {
  interactions: InteractionStore;
}): ServiceImpl<typeof InteractionService> {
  const statement = (
    workspaceId: string,
    bound: FiltersOf<typeof listInteractionsQuery>,
    take: number,
    after: [Date, string] | undefined,
  ) =>
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
    );
  // Pages are written from the statement's raw rows (packages/rpc row-pages.ts); the object path stays for the rest.
  const list = rowList({
    list: LIST,
    query: listInteractionsQuery,
    defaultLimit: 100,
    // One Date per page, for the next cursor.
    sortKey: (r: InteractionRow) => new Date(r.createdAt),
    sortColumn: () => "createdAt",
    response: ListInteractionsResponseSchema,
    statement,
    toMessage: interactionToProto,
  });
  return {
    listInteractions: (req) => list(req.workspaceId, plainOf(ListInteractionsRequestSchema, req)),
  };
}
