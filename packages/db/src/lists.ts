import { notFound } from "@funil/errors";
import { check, idParam, type z } from "@funil/schemas";
import { keysetPage } from "./cursors.js";

/** What every list query carries besides its filters (docs/api/conventions.md §Lists and pagination). */
interface PageQuery {
  cursor?: string | undefined;
  limit: number;
}

/** A list query's filters: the checked query without its page. */
export type FiltersOf<S extends z.ZodType> = Omit<z.output<S>, "cursor" | "limit">;

/** One page as a service answers it: the rows as messages, and the cursor of the next page if any. */
export interface ListPage<M> {
  data: M[];
  nextCursor: string | undefined;
}

/** A keyset list of one resource, as its service's list handler reads it. */
export interface KeysetList<S extends z.ZodType<PageQuery>, F, R, M> {
  /** The list its cursors are issued for: a cursor of another list is invalid_cursor. */
  list: string;
  /** The query's shared schema (packages/schemas), checked as the request's "query". */
  query: S;
  /** The page size when the query gives none. */
  defaultLimit: number;
  /**
   * The filters a cursor is bound to (with the workspace), from the checked query's: defaults filled in,
   * values converted. Without it, the query's filters as they are.
   */
  bind?: (filters: FiltersOf<S>) => F;
  /** The timestamp the list is ordered by (then id), for the next cursor. */
  sortKey: (row: R, filters: F) => Date;
  /** `take` rows of the workspace after `after` (the cursor's position), in the list's order. */
  fetch: (workspaceId: string, filters: F, take: number, after: [Date, string] | undefined) => Promise<R[]>;
  /** A row as the reply's message. */
  toMessage: (row: R) => M;
}

/**
 * A list handler: the request's query (its fields as a plain object) checked against the list's schema,
 * then one page of it (listPage).
 */
export function keysetList<S extends z.ZodType<PageQuery>, R extends { id: string }, M, F = FiltersOf<S>>(
  spec: KeysetList<S, F, R, M>,
): (workspaceId: string, plain: unknown) => Promise<ListPage<M>> {
  return async (workspaceId, plain) => listPage(spec, workspaceId, check(spec.query, plain, "query"));
}

/**
 * One page of a list from its checked query: the limit and the cursor decoded (keysetPage), the store
 * asked with the workspace and the cursor's position, the rows mapped to messages and the next cursor
 * issued for the same filters. For a handler that has more to check between the query and the page.
 */
export async function listPage<S extends z.ZodType<PageQuery>, R extends { id: string }, M, F>(
  spec: KeysetList<S, F, R, M>,
  workspaceId: string,
  query: z.output<S>,
): Promise<ListPage<M>> {
  const { cursor, limit, ...given } = query;
  const filters = spec.bind ? spec.bind(given) : (given as F);
  const { rows, nextCursor } = await keysetPage<R>({
    list: spec.list,
    workspaceId,
    filters: filters as Record<string, unknown>,
    cursor,
    limit,
    defaultLimit: spec.defaultLimit,
    sortKey: (row) => spec.sortKey(row, filters),
    fetch: (take, after) => spec.fetch(workspaceId, filters, take, after),
  });
  return { data: rows.map((row) => spec.toMessage(row)), nextCursor };
}

/**
 * A get handler: the id checked as the request's path, the workspace's row read, not_found naming
 * `what` when there is none, else the row as the reply.
 */
export function getById<R, M>(
  what: string,
  fetch: (workspaceId: string, id: string) => Promise<R | undefined>,
  reply: (row: R) => M,
): (req: { workspaceId: string; id: string }) => Promise<M> {
  return async (req) => {
    const { id } = check(idParam, { id: req.id }, "path");
    const row = await fetch(req.workspaceId, id);
    if (!row) throw notFound(what);
    return reply(row);
  };
}
