import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { fail } from "@funil/errors";
import { parseTimestamp } from "@funil/schemas";

/**
 * Opaque keyset cursors (docs/api/conventions.md §Lists and pagination). A cursor names the list it belongs to
 * and a digest of the filters it was issued with; any other use is
 * `invalid_cursor`. Its position is the sort key of the last item returned.
 * It is signed (HMAC-SHA-256 with the first of CURSOR_KEYS, truncated to 128 bits): a position a
 * client changed, or a cursor it made itself, is `invalid_cursor`, not a place to read from.
 */
export type Position = Array<string | number>;

/** A process started without CURSOR_KEYS signs with this one (and says so at start). */
const DEVELOPMENT_KEY = "funil-development-cursor-key";
const TAG_BYTES = 16;

let signingKeys: Buffer[] = [Buffer.from(DEVELOPMENT_KEY)];

/**
 * Installs the keys of CURSOR_KEYS, once at start: the first signs, every one verifies, so a new key put
 * first does not break the cursors signed with the old one while it stays listed. Without keys the
 * development key stays, and `warn` says so: cursors would then be forgeable by anyone who read the code.
 */
export function useCursorKeys(keys: readonly string[] | undefined, warn: (message: string) => void): void {
  if (!keys?.length) {
    signingKeys = [Buffer.from(DEVELOPMENT_KEY)];
    warn("CURSOR_KEYS is not set: list cursors are signed with the development key");
    return;
  }
  signingKeys = keys.map((k) => Buffer.from(k));
}

const tagOf = (payload: string, key: Buffer) =>
  createHmac("sha256", key).update(payload).digest().subarray(0, TAG_BYTES);

function digest(filters: Record<string, unknown>): string {
  const stable = Object.keys(filters)
    .filter((k) => filters[k] !== undefined && filters[k] !== null)
    .sort()
    .map((k) => [k, filters[k]]);
  return createHash("sha256").update(JSON.stringify(stable)).digest("base64url").slice(0, 16);
}

/** `<base64url JSON>.<base64url tag>`: the tag signs the JSON's encoding, exactly as sent. */
export function encodeCursor(list: string, filters: Record<string, unknown>, position: Position): string {
  const payload = Buffer.from(JSON.stringify({ l: list, f: digest(filters), p: position })).toString(
    "base64url",
  );
  return `${payload}.${tagOf(payload, signingKeys[0]!).toString("base64url")}`;
}

/** The JSON of a cursor whose tag one of the keys made, else undefined. */
function verified(cursor: string): string | undefined {
  const [payload, tag, ...rest] = cursor.split(".");
  if (!payload || !tag || rest.length > 0) return undefined;
  const given = Buffer.from(tag, "base64url");
  if (given.length !== TAG_BYTES) return undefined;
  if (!signingKeys.some((key) => timingSafeEqual(tagOf(payload, key), given))) return undefined;
  return Buffer.from(payload, "base64url").toString("utf8");
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
  if (cursor.length > 1000 || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  const json = verified(cursor);
  if (json === undefined) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
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
 * One keyset page (docs/api/conventions.md §Lists and pagination): checks the limit (0 = the list's default,
 * else 1..500), turns the cursor into the position to read after, asks
 * `fetch` for one row more than the page, and issues the next cursor from the
 * page's last row when that extra row exists.
 */
export async function keysetPage<R>(opts: {
  list: string;
  /** A cursor is bound to its workspace too: another workspace's cursor is invalid_cursor. */
  workspaceId: string;
  filters: Record<string, unknown>;
  cursor: string | undefined;
  limit: number;
  defaultLimit: number;
  /** The timestamp the list is ordered by (then id). */
  sortKey: (row: R) => Date;
  /** The row's id (default: its `id`). */
  idOf?: (row: R) => string;
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
      ? encodeCursor(opts.list, bound, [
          opts.sortKey(last).toISOString(),
          opts.idOf ? opts.idOf(last) : (last as unknown as { id: string }).id,
        ])
      : undefined;
  return { rows: page, nextCursor };
}
