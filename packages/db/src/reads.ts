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

/**
 * A read whose answer depends only on its key (a workspace's whole list of pipelines, of members…),
 * coalesced: the reads of one key started in the same turn of the event loop (the calls of one RPC batch)
 * share one run of `read`, which starts after all of them arrived, so each sees every write committed
 * before it was asked, as a read of its own would. Nothing is kept past that turn, and reads of other
 * keys run side by side, each once. The answer is shared: its callers must not change it. `keyOf` names
 * a key (by default the key itself, a string).
 */
export function coalescedByKey<K, T>(
  read: (key: K) => PromiseLike<T>,
  keyOf: (key: K) => string = String,
): (key: K) => Promise<T> {
  const loader = new DataLoader<K, T, string>(
    async (keys) => {
      const runs = new Map<string, Promise<T | Error>>();
      for (const key of keys) {
        const name = keyOf(key);
        if (!runs.has(name))
          runs.set(
            name,
            // A read that throws fails its own callers only, as one that rejects.
            Promise.resolve(key)
              .then(read)
              .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))),
          );
      }
      return Promise.all(keys.map((key) => runs.get(keyOf(key))!));
    },
    { cache: false, cacheKeyFn: keyOf, maxBatchSize: 256 },
  );
  return (key) => loader.load(key);
}
