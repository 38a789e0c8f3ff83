import { type EmitChange, isUniqueViolation, keptRecords, newId, type Origin, type Sql } from "@funil/db";
import { fail } from "@funil/errors";
import type { Window } from "../slots.js";

export interface CalendarRecord {
  id: string;
  workspaceId: string;
  key: string;
  name: string;
  durationMin: number;
  dailyCap: number;
  timezone: string;
  slotIntervalMin: number;
  assigneeUserIds: string[];
  availability: Window[];
  createdAt: Date;
}

export type CalendarInput = Omit<CalendarRecord, "id" | "workspaceId" | "createdAt">;

/** Internal events (docs/api/events.md §Every event type): every calendar's creation is in GET /audit. */
export type EmitCalendarEvent = EmitChange<"calendar.created", CalendarRecord>;

export function calendarStore(sql: Sql, emit: EmitCalendarEvent) {
  /** Calendars kept in memory: a calendar never changes once created (docs/api/admin.md §Routes: there is no update). */
  const kept = keptRecords<CalendarRecord>({
    read: (workspaceId, ids) => sql<CalendarRecord[]>`
      select * from calendars where workspace_id = ${workspaceId} and id = any(${ids as string[]})`,
    refs: (workspaceId) => sql<{ id: string }[]>`
      select id from calendars where workspace_id = ${workspaceId} order by created_at, id`,
  });
  return {
    async create(workspaceId: string, input: CalendarInput, now: Date, by: Origin): Promise<CalendarRecord> {
      try {
        return await sql.begin(async (tx) => {
          const [row] = await tx<CalendarRecord[]>`
          insert into calendars ${tx({
            id: newId("cal", now.getTime()),
            workspace_id: workspaceId,
            key: input.key,
            name: input.name,
            duration_min: input.durationMin,
            daily_cap: input.dailyCap,
            timezone: input.timezone,
            slot_interval_min: input.slotIntervalMin,
            assignee_user_ids: input.assigneeUserIds,
            availability: tx.json(input.availability as never),
            created_at: now,
          })} returning *`;
          await emit(tx, "calendar.created", row!, by);
          return row!;
        });
      } catch (err) {
        if (isUniqueViolation(err, "calendars_key_unique"))
          throw fail("conflict", `a calendar with key ${input.key} already exists in this workspace`, [
            { path: "body.key", message: "already used by another calendar" },
          ]);
        throw err;
      }
    },

    /**
     * A workspace's calendars in order of creation. Only their ids are read each time (a calendar never
     * changes, so the rows already in memory are the rows), once for the lists of the workspace asked in
     * the same turn; the others are read in one statement.
     */
    async list(workspaceId: string): Promise<CalendarRecord[]> {
      return kept.list(workspaceId);
    },

    get: (workspaceId: string, id: string): Promise<CalendarRecord | undefined> => kept.get(workspaceId, id),
  };
}
export type CalendarStore = ReturnType<typeof calendarStore>;
