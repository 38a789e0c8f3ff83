import { createHash } from "node:crypto";
import { fail } from "@funil/errors";
import { parseTimestamp } from "@funil/schemas";

/**
 * Opaque keyset cursors (API.md §4). A cursor names the list it belongs to
 * and a digest of the filters it was issued with; any other use is
 * `invalid_cursor`. Its position is the sort key of the last item returned.
 */
export type Position = Array<string | number>;

function digest(filters: Record<string, unknown>): string {
  const stable = Object.keys(filters)
    .filter((k) => filters[k] !== undefined && filters[k] !== null)
    .sort()
    .map((k) => [k, filters[k]]);
  return createHash("sha256").update(JSON.stringify(stable)).digest("base64url").slice(0, 16);
}

export function encodeCursor(list: string, filters: Record<string, unknown>, position: Position): string {
  return Buffer.from(JSON.stringify({ l: list, f: digest(filters), p: position })).toString("base64url");
}

const bad = () => fail("invalid_cursor", "cursor is invalid or was issued for other filters");

/**
 * Returns the position, checked against `shape` (one entry per key: "string",
 * "number" or "timestamp", an ISO string that parses).
 */
export function decodeCursor(
  cursor: string,
  list: string,
  filters: Record<string, unknown>,
  shape: Array<"string" | "number" | "timestamp">,
): Position {
  if (cursor.length > 1000 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw bad();
  }
  const c = parsed as { l?: unknown; f?: unknown; p?: unknown };
  if (!c || typeof c !== "object" || c.l !== list || c.f !== digest(filters) || !Array.isArray(c.p))
    throw bad();
  const p = c.p as unknown[];
  if (p.length !== shape.length) throw bad();
  shape.forEach((kind, i) => {
    const v = p[i];
    const ok =
      kind === "number"
        ? typeof v === "number" && Number.isFinite(v)
        : typeof v === "string" &&
          v.length <= 200 &&
          // A forged NUL would reach PostgreSQL, which refuses it in text.
          !v.includes("\u0000") &&
          (kind === "string" || parseTimestamp(v) !== undefined);
    if (!ok) throw bad();
  });
  return p as Position;
}

/**
 * One keyset page (API.md §4): checks the limit (0 = the list's default,
 * else 1..500), turns the cursor into the position to read after, asks
 * `fetch` for one row more than the page, and issues the next cursor from the
 * page's last row when that extra row exists.
 */
export async function keysetPage<R extends { id: string }>(opts: {
  list: string;
  /** A cursor is bound to its workspace too: another workspace's cursor is invalid_cursor. */
  workspaceId: string;
  filters: Record<string, unknown>;
  cursor: string | undefined;
  limit: number;
  defaultLimit: number;
  /** The timestamp the list is ordered by (then id). */
  sortKey: (row: R) => Date;
  fetch: (take: number, after: [Date, string] | undefined) => Promise<R[]>;
}): Promise<{ rows: R[]; nextCursor: string | undefined }> {
  const limit = opts.limit === 0 ? opts.defaultLimit : opts.limit;
  if (!Number.isInteger(limit) || limit < 1 || limit > 500)
    throw fail("validation_failed", "limit must be between 1 and 500", [
      { path: "limit", message: "must be between 1 and 500" },
    ]);
  const bound = { ...opts.filters, workspaceId: opts.workspaceId };
  let after: [Date, string] | undefined;
  if (opts.cursor) {
    const [at, id] = decodeCursor(opts.cursor, opts.list, bound, ["timestamp", "string"]);
    after = [new Date(at as string), id as string];
  }
  const rows = await opts.fetch(limit + 1, after);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const nextCursor =
    rows.length > limit && last
      ? encodeCursor(opts.list, bound, [opts.sortKey(last).toISOString(), last.id])
      : undefined;
  return { rows: page, nextCursor };
}
