import DataLoader from "dataloader";
import type postgres from "postgres";
import type { Sql } from "./client.js";

/** What a row read by (workspace, id) carries of its key. */
export interface Keyed {
  workspaceId: string;
  id: string;
}

/**
 * Reads of one row by (workspace, id), coalesced: the reads started in the same turn of the event loop
 * (the calls of one RPC batch, packages/rpc BatchService) share one statement, `many`, which returns the
 * rows it found; each read gets its own row, or undefined. A read alone runs `one`, the plain statement.
 * Nothing is cached: every read sees the database as it is at that moment, and a row of another
 * workspace is never an answer (the key is the pair). bench/RESULTS.md shows what this is worth.
 *
 * `many` gets the keys as `keys`, a VALUES list of rows (workspace_id, id) to use as
 * `where (workspace_id, id) in ${keys}` or `from ${keys} as k(workspace_id, id)`: see keyRows.
 */
export function coalescedReads<R extends Keyed>(
  sql: Sql,
  read: {
    one(workspaceId: string, id: string): Promise<R | undefined>;
    many(keys: postgres.Fragment): Promise<R[]>;
  },
): (workspaceId: string, id: string) => Promise<R | undefined> {
  const loader = new DataLoader<Keyed, R | undefined, string>(
    async (keys) => {
      if (keys.length === 1) return [await read.one(keys[0]!.workspaceId, keys[0]!.id)];
      const rows = await read.many(keyRows(sql, keys));
      const found = new Map(rows.map((r) => [keyOf(r), r]));
      return keys.map((k) => found.get(keyOf(k)));
    },
    { cache: false, cacheKeyFn: keyOf, maxBatchSize: 256 },
  );
  return (workspaceId, id) => loader.load({ workspaceId, id });
}

/**
 * Keys as `(values ($1, $2), ($3, $4), …)`, one parameter per value, padded with repeats of the last
 * key to a power of two. PostgreSQL plans such a statement once and keeps the plan: a list of n rows is
 * estimated as n rows whatever the values, so after five executions its generic plan costs no more
 * than a custom one and is kept. The arrays this replaced (`unnest($1::text[], $2::text[])`) were
 * estimated at 10 elements in the generic plan and at their true length in a custom one, so every
 * batch of fewer than 10 was planned afresh, at about twice the PostgreSQL CPU of a kept plan
 * (bench/RESULTS.md has the figures). The padding keeps the statements few:
 * nine sizes from 1 to 256, each prepared once per connection.
 */
export function keyRows(sql: Sql, keys: readonly Keyed[]): postgres.Fragment {
  let size = 1;
  while (size < keys.length) size *= 2;
  const rows: string[][] = keys.map((k) => [k.workspaceId, k.id]);
  while (rows.length < size) rows.push(rows[rows.length - 1]!);
  return sql`(values ${sql(rows)})`;
}

const keyOf = (k: Keyed) => `${k.workspaceId}\u0000${k.id}`;
