import { coalescedByKey } from "./reads.js";

/** What names a record kept by `keptRecords`: its id, unique in its workspace, and its version when it can change. */
export interface RecordRef {
  id: string;
  /** The row's version (a trigger counts the updates that changed it); absent for records that never change. */
  version?: number;
}

/**
 * Records kept in memory by (workspace, id), so that a list of them reads only their ids (and versions)
 * and writes each one's API JSON once. For records the API never changes once written (a calendar, a
 * pipeline with its stages, a custom field's definition: none has an update) the id is enough; for the
 * others the list reads each row's version, which a trigger raises at every update that changes the row,
 * whatever the code path, and a kept record of another version is read again. The ids come from the database at every list, in the
 * list's order: a record written or changed through another copy of the service is read at this copy's next
 * list, one gone with its workspace is no longer listed, and a workspace's records are never another's (the
 * key is the pair). At most `max` records are kept; past that the oldest kept is dropped, and read again
 * when a list names it.
 */
export function keptRecords<R extends RecordRef, F = never>(source: {
  /** The records of `ids` in the workspace, as they are now (any order; one not found is left out). */
  read: (workspaceId: string, ids: readonly string[]) => Promise<readonly R[]>;
  /**
   * The refs of the workspace's list (of those `filter` keeps), in the list's order. Read at every list;
   * the same list asked in one turn of the event loop shares one run (coalescedByKey).
   */
  refs: (workspaceId: string, filter: F | undefined) => PromiseLike<readonly RecordRef[]>;
  /** At most this many records are kept. */
  max?: number;
}) {
  const { read, refs, max = 10_000 } = source;
  const refsOf = coalescedByKey(
    ({ workspaceId, filter }: { workspaceId: string; filter: F | undefined }) => refs(workspaceId, filter),
    ({ workspaceId, filter }) => JSON.stringify([workspaceId, filter ?? null]),
  );
  const kept = new Map<string, R>();
  const keyOf = (workspaceId: string, id: string) => `${workspaceId} ${id}`;
  const remember = (workspaceId: string, record: R) => {
    const key = keyOf(workspaceId, record.id);
    kept.delete(key);
    if (kept.size >= max) kept.delete(kept.keys().next().value!);
    kept.set(key, record);
    return record;
  };
  /** The records `listed` names, in that order: those kept at their version from memory, the others in one read. */
  async function inOrder(workspaceId: string, listed: readonly RecordRef[]): Promise<R[]> {
    const found = new Map<string, R>();
    const missing: string[] = [];
    for (const ref of listed) {
      const record = kept.get(keyOf(workspaceId, ref.id));
      if (record && record.version === ref.version) found.set(ref.id, record);
      else missing.push(ref.id);
    }
    if (missing.length > 0)
      for (const record of await read(workspaceId, missing))
        found.set(record.id, remember(workspaceId, record));
    return listed.flatMap((ref) => found.get(ref.id) ?? []);
  }
  return {
    /**
     * The workspace's list (of those `filter` keeps), in its order, as it is now: its refs are read, once
     * for the same list asked in one turn, and the records not kept at their version in one statement.
     */
    async list(workspaceId: string, filter?: F): Promise<R[]> {
      return inOrder(workspaceId, await refsOf({ workspaceId, filter }));
    },

    /** One record that never changes, from memory when kept. */
    async get(workspaceId: string, id: string): Promise<R | undefined> {
      const record = kept.get(keyOf(workspaceId, id));
      if (record) return record;
      const [fresh] = await read(workspaceId, [id]);
      return fresh && remember(workspaceId, fresh);
    },
  };
}
