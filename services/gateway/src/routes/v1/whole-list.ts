import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { decodeCursor, encodeCursor, toApiJson } from "@funil/rpc";
import { cursor, limit } from "@funil/schemas";
import type { FastifyReply } from "fastify";
import { sendJsonItems } from "./json-page.js";

/**
 * The query of a list its service answers whole (pipelines, members, custom fields, calendars, slots,
 * webhooks): `limit` 1..500 like every list, by default 500, so a list of a usual size is one page with
 * nextCursor null; the cursor of the page before.
 */
export const wholeListQuery = { cursor: cursor.optional(), limit: limit(500) };

/** Which list a page is of, and which page (pageOf). */
export interface Paging {
  list: string;
  workspaceId: string;
  filters?: Record<string, unknown>;
  cursor?: string | undefined;
  limit: number;
}

/**
 * One page of a list read whole from its service, in the service's order. The cursor holds the index
 * and the key of the last item returned: the next page starts after that item where it is now, or, when
 * it is gone, at the index it had (where the item after it moved). Signed like every cursor and bound
 * to the list, the workspace and the filters.
 */
export function pageOf<T>(
  items: T[],
  opts: Paging & {
    /** What names an item in its list (its id; a slot's startAt). */
    key: (item: T) => string;
  },
): { data: T[]; nextCursor: string | null } {
  const bound = { ...opts.filters, workspaceId: opts.workspaceId };
  let start = 0;
  if (opts.cursor) {
    const [index, key] = decodeCursor(opts.cursor, opts.list, bound, ["number", "string"]);
    const at = items.findIndex((item) => opts.key(item) === key);
    start = at >= 0 ? at + 1 : Math.max(0, Math.trunc(index as number));
  }
  const data = items.slice(start, start + opts.limit);
  const lastIndex = start + data.length - 1;
  const last = data[data.length - 1];
  const nextCursor =
    last !== undefined && lastIndex + 1 < items.length
      ? encodeCursor(opts.list, bound, [lastIndex, opts.key(last)])
      : null;
  return { data, nextCursor };
}

/** A whole list as its service answers it when asked with `api_json`. */
interface JsonListAnswer<D extends DescMessage> {
  /** The items as messages: what a copy of the service from before `api_json` answers (during a roll). */
  data: MessageShape<D>[];
  /** Each item's id and, at the same index, its API JSON. */
  ids: string[];
  itemsJson: string[];
}

/**
 * A page (pageOf) of a whole list whose service answered each item as the API's JSON, kept in its memory
 * with the record (keptRecords in @funil/db): sent as it came, nothing decoded, mapped or serialized
 * here. From an older copy of the service, which answers messages, the page is mapped as every list's.
 */
export function sendWholeJsonList<D extends DescMessage>(
  reply: FastifyReply,
  schema: D,
  res: JsonListAnswer<D>,
  paging: Paging,
) {
  if (res.data.length > 0)
    return pageOf(
      res.data.map((m) => toApiJson(schema, m)),
      { ...paging, key: (item) => String(item.id) },
    );
  const page = pageOf(
    res.ids.map((id, i) => ({ id, json: res.itemsJson[i]! })),
    { ...paging, key: (item) => item.id },
  );
  return sendJsonItems(
    reply,
    page.data.map((item) => item.json),
    page.nextCursor,
  );
}
