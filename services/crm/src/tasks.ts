import { isDeepStrictEqual } from "node:util";
import { nullIfBlank } from "./text.js";

/** The writable state of a task (docs/api/deals.md §Task). */
export interface TaskState {
  title: string;
  body: string | null;
  contactId: string | null;
  opportunityId: string | null;
  assigneeUserId: string | null;
  dueAt: Date | null;
  completedAt: Date | null;
}

export interface TaskRecord extends TaskState {
  id: string;
  workspaceId: string;
  createdAt: Date;
  updatedAt: Date;
}

/** A create or PATCH body: a value, null for "clear" (PATCH), absent = untouched. */
export interface TaskChanges {
  title?: string;
  body?: string | null;
  contactId?: string | null;
  opportunityId?: string | null;
  assigneeUserId?: string | null;
  dueAt?: Date | null;
  completed?: boolean;
}

export function newTask(input: TaskChanges & { title: string }, now: Date): TaskState {
  return applyTaskPatch(
    {
      title: input.title,
      body: null,
      contactId: null,
      opportunityId: null,
      assigneeUserId: null,
      dueAt: null,
      completedAt: null,
    },
    input,
    now,
  );
}

/**
 * PATCH rules (docs/api/deals.md §Task): absent = untouched, null = cleared;
 * `completed: true` sets completedAt (kept when it is already completed),
 * `completed: false` clears it.
 */
export function applyTaskPatch(current: TaskState, patch: TaskChanges, now: Date): TaskState {
  const next: TaskState = { ...current };
  if (patch.title !== undefined) next.title = patch.title;
  for (const f of ["body", "contactId", "opportunityId", "assigneeUserId"] as const) {
    if (f in patch) next[f] = nullIfBlank(patch[f]);
  }
  if ("dueAt" in patch) next.dueAt = patch.dueAt ?? null;
  if (patch.completed === true && !current.completedAt) next.completedAt = now;
  if (patch.completed === false) next.completedAt = null;
  return next;
}

export function sameTask(a: TaskState, b: TaskState): boolean {
  const plain = (t: TaskState) => ({
    ...t,
    dueAt: t.dueAt?.getTime() ?? null,
    completedAt: t.completedAt?.getTime() ?? null,
  });
  return isDeepStrictEqual(plain(a), plain(b));
}
