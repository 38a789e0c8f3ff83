/** A record kept by `immutableRecords`: its id, unique in its workspace. */
export interface Identified {
  id: string;
}

/**
 * Records the API never changes once written (a calendar, a pipeline with its stages, a custom field's
 * definition: none has an update), kept in memory by (workspace, id) so that a list of them reads only
 * their ids. The ids come from the database at every list, in the list's order: a record written through
 * another copy of the service is found there and read once, one gone with its workspace is no longer
 * listed, and a workspace's records are never another's (the key is the pair). At most `max` records are
 * kept; past that the oldest kept is dropped, and read again when a list names it.
 */
export function immutableRecords<R extends Identified>(
  /** The records of `ids` in the workspace (any order; one not found is left out). */
  read: (workspaceId: string, ids: readonly string[]) => Promise<readonly R[]>,
  max = 10_000,
) {
  const kept = new Map<string, R>();
  const keyOf = (workspaceId: string, id: string) => `${workspaceId} ${id}`;
  const remember = (workspaceId: string, record: R) => {
    if (kept.size >= max) kept.delete(kept.keys().next().value!);
    kept.set(keyOf(workspaceId, record.id), record);
    return record;
  };
  return {
    /** A record just written (its creation), so that the next list need not read it. */
    remember,

    /** The records of `ids`, in that order: those kept from memory, the others in one read. */
    async inOrder(workspaceId: string, ids: readonly string[]): Promise<R[]> {
      const found = new Map<string, R>();
      const missing: string[] = [];
      for (const id of ids) {
        const record = kept.get(keyOf(workspaceId, id));
        if (record) found.set(id, record);
        else missing.push(id);
      }
      if (missing.length > 0)
        for (const record of await read(workspaceId, missing))
          found.set(record.id, remember(workspaceId, record));
      return ids.flatMap((id) => found.get(id) ?? []);
    },

    /** One record, from memory when kept. */
    async get(workspaceId: string, id: string): Promise<R | undefined> {
      const record = kept.get(keyOf(workspaceId, id));
      if (record) return record;
      const [fresh] = await read(workspaceId, [id]);
      return fresh && remember(workspaceId, fresh);
    },
  };
}
