import { decodeCursor, encodeCursor } from "@funil/rpc";
import { cursor, limit } from "@funil/schemas";

/**
 * The query of a list its service answers whole (pipelines, members, custom fields, calendars, slots,
 * webhooks): `limit` 1..500 like every list, by default 500, so a list of a usual size is one page with
 * nextCursor null; the cursor of the page before.
 */
export const wholeListQuery = { cursor: cursor.optional(), limit: limit(500) };

/**
 * One page of a list read whole from its service, in the service's order. The cursor holds the index
 * and the key of the last item returned: the next page starts after that item where it is now, or, when
 * it is gone, at the index it had (where the item after it moved). Signed like every cursor and bound
 * to the list, the workspace and the filters.
 */
export function pageOf<T>(
  items: T[],
  opts: {
    list: string;
    workspaceId: string;
    filters?: Record<string, unknown>;
    cursor?: string | undefined;
    limit: number;
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
