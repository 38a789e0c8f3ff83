import {
  type EmitChange,
  inTransaction,
  newId,
  type Origin,
  pageLimit,
  type Sql,
  type TransactionSql,
} from "@funil/db";
import { invalidReference, notFound } from "@funil/errors";
import {
  applyTaskPatch,
  newTask,
  sameTask,
  type TaskChanges,
  type TaskRecord,
  type TaskState,
} from "../tasks.js";
import { checkReferences, mapWriteError, type Reference } from "./references.js";

export type EmitTaskEvent = EmitChange<"task.created" | "task.updated", TaskRecord>;

export interface TaskFilters {
  assigneeUserId?: string;
  /** true: not completed; false: completed; absent: both. */
  open?: boolean;
}

type Db = Sql | TransactionSql;

const columns = (sql: Db) => sql`
  id, workspace_id, title, body, contact_id, opportunity_id, assignee_user_id, due_at, completed_at, created_at, updated_at`;

function stateColumns(s: TaskState) {
  return {
    title: s.title,
    body: s.body,
    contact_id: s.contactId,
    opportunity_id: s.opportunityId,
    assignee_user_id: s.assigneeUserId,
    due_at: s.dueAt,
    completed_at: s.completedAt,
  };
}

/**
 * References of a task (docs/api/deals.md §Task): each must exist in the workspace (a
 * trashed deal does not). A task about a deal is about the deal's contact:
 * contactId defaults to it, and another contactId is a 422.
 */
async function resolveReferences(
  tx: TransactionSql,
  workspaceId: string,
  next: TaskState,
  changed: TaskChanges,
) {
  const refs: Reference[] = [];
  if (changed.contactId && next.contactId)
    refs.push({ path: "contactId", kind: "contact", id: next.contactId });
  if (changed.opportunityId && next.opportunityId)
    refs.push({ path: "opportunityId", kind: "opportunity", id: next.opportunityId });
  if (changed.assigneeUserId && next.assigneeUserId)
    refs.push({ path: "assigneeUserId", kind: "member", id: next.assigneeUserId });
  await checkReferences(tx, workspaceId, refs);
  if (next.opportunityId && (changed.opportunityId || changed.contactId)) {
    const [deal] = await tx<{ contactId: string }[]>`
      select contact_id from opportunities where workspace_id = ${workspaceId} and id = ${next.opportunityId}`;
    if (deal && next.contactId === null) next.contactId = deal.contactId;
    else if (deal && next.contactId !== deal.contactId)
      throw invalidReference([{ path: "contactId", message: "the opportunity belongs to another contact" }]);
  }
}

export function taskStore(sql: Sql, emit: EmitTaskEvent) {
  function listQuery(workspaceId: string, f: TaskFilters, limit: number, after?: [Date, string]) {
    const c = [sql`workspace_id = ${workspaceId}`];
    if (f.assigneeUserId) c.push(sql`assignee_user_id = ${f.assigneeUserId}`);
    if (f.open !== undefined) c.push(sql`done = ${!f.open}`);
    if (after) c.push(sql`(created_at, id) > (${after[0]}, ${after[1]})`);
    const where = c.reduce((acc, x) => sql`${acc} and ${x}`);
    return sql<
      TaskRecord[]
    >`select ${columns(sql)} from tasks where ${where} order by created_at, id ${pageLimit(sql, limit)}`;
  }

  return {
    listQuery,
    /** Keyset page in (createdAt, id) order (docs/api/conventions.md §Lists and pagination): the statement, run when awaited. */
    list: listQuery,

    async create(
      workspaceId: string,
      input: TaskChanges & { title: string },
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ): Promise<TaskRecord> {
      return inTransaction(sql, outer, async (tx) => {
        const state = newTask(input, now);
        await resolveReferences(tx, workspaceId, state, input);
        try {
          const [row] = await tx<TaskRecord[]>`
            insert into tasks ${tx({
              id: newId("tsk", now.getTime()),
              workspace_id: workspaceId,
              ...stateColumns(state),
              created_at: now,
              updated_at: now,
            })} returning ${columns(tx)}`;
          await emit(tx, "task.created", row!, by);
          return row!;
        } catch (err) {
          mapWriteError(err);
        }
      });
    },

    /** PATCH; a change that changes nothing writes and emits nothing. */
    async update(
      workspaceId: string,
      id: string,
      patch: TaskChanges,
      now: Date,
      by: Origin,
    ): Promise<TaskRecord> {
      return sql.begin(async (tx) => {
        const [found] = await tx<TaskRecord[]>`
          select ${columns(tx)} from tasks where workspace_id = ${workspaceId} and id = ${id} for update`;
        if (!found) throw notFound("task");
        const next = applyTaskPatch(found, patch, now);
        await resolveReferences(tx, workspaceId, next, patch);
        if (sameTask(found, next)) return found;
        try {
          const [row] = await tx<TaskRecord[]>`
            update tasks set ${tx({ ...stateColumns(next), updated_at: now })} where id = ${id} returning ${columns(tx)}`;
          await emit(tx, "task.updated", row!, by, found);
          return row!;
        } catch (err) {
          mapWriteError(err);
        }
      });
    },
  };
}
export type TaskStore = ReturnType<typeof taskStore>;
