import DataLoader from "dataloader";

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
 */
export function coalescedReads<R extends Keyed>(read: {
  one(workspaceId: string, id: string): Promise<R | undefined>;
  many(workspaceIds: string[], ids: string[]): Promise<R[]>;
}): (workspaceId: string, id: string) => Promise<R | undefined> {
  const loader = new DataLoader<Keyed, R | undefined, string>(
    async (keys) => {
      if (keys.length === 1) return [await read.one(keys[0]!.workspaceId, keys[0]!.id)];
      const rows = await read.many(
        keys.map((k) => k.workspaceId),
        keys.map((k) => k.id),
      );
      const found = new Map(rows.map((r) => [keyOf(r), r]));
      return keys.map((k) => found.get(keyOf(k)));
    },
    { cache: false, cacheKeyFn: keyOf, maxBatchSize: 256 },
  );
  return (workspaceId, id) => loader.load({ workspaceId, id });
}

const keyOf = (k: Keyed) => `${k.workspaceId}\u0000${k.id}`;
