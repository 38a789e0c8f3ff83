import { type ErrorDetail, fail } from "@funil/errors";
import type { LocalDay } from "./local-time.js";

export type AppointmentStatus = "scheduled" | "canceled";
export type Outcome = "realizada" | "noshow" | "reagendada";
export type MeetingEventType =
  | "meeting.booked"
  | "meeting.rescheduled"
  | "meeting.canceled"
  | "meeting.outcome";

/** A meeting as stored (docs/api/meetings.md §Meeting (appointment)). */
export interface AppointmentRecord {
  id: string;
  workspaceId: string;
  calendarId: string;
  calendarKey: string;
  contactId: string;
  contactName: string | null;
  opportunityId: string | null;
  title: string | null;
  location: string | null;
  conferenceUrl: string | null;
  startAt: Date;
  endAt: Date;
  localDay: LocalDay;
  assigneeUserId: string;
  status: AppointmentStatus;
  outcome: Outcome | null;
  outcomeAt: Date | null;
  canceledAt: Date | null;
  cancelReason: string | null;
  source: string | null;
  createdByUserId: string | null;
  createdBySource: string;
  recoveredFromAppointmentId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Everything a booking needs, checked: the calendar's slot, the contact's name from crm. */
export interface BookingDraft {
  calendarId: string;
  calendarKey: string;
  dailyCap: number;
  contactId: string;
  contactName: string | null;
  opportunityId: string | null;
  title: string | null;
  location: string | null;
  conferenceUrl: string | null;
  source: string | null;
  assigneeUserId: string;
  startAt: Date;
  endAt: Date;
  localDay: LocalDay;
}

/** A move of a meeting (docs/api/meetings.md §POST /appointments/{id}/reschedule), checked like a booking. */
export interface Move {
  assigneeUserId: string;
  startAt: Date;
  endAt: Date;
  localDay: LocalDay;
  dailyCap: number;
}

/** Created through the API: no user behind it (docs/api/meetings.md §POST /appointments). */
export const CREATED_BY_SOURCE = "api";

/** The assignee must be one of the calendar's (docs/api/meetings.md §POST /appointments: 422 invalid_reference). */
export function checkAssignee(calendar: { assigneeUserIds: string[] }, assigneeUserId: string): void {
  if (!calendar.assigneeUserIds.includes(assigneeUserId))
    throw fail("invalid_reference", `assigneeUserId: ${assigneeUserId} is not an assignee of this calendar`, [
      { path: "assigneeUserId", message: "not an assignee of this calendar" },
    ]);
}

/**
 * A contact crm does not have in the workspace (docs/api/meetings.md §POST /appointments: 422
 * invalid_reference), or one scheduling knows erased though crm's answer came before (store/erasures.ts).
 */
export const noContact = (contactId: string): ErrorDetail => ({
  path: "contactId",
  message: `no contact ${contactId} in this workspace`,
});

/** Reschedule and outcome need a meeting that still stands (docs/api/meetings.md §POST /appointments/{id}/reschedule, §POST /appointments/{id}/outcome: 409 on a canceled meeting). */
export function mustBeScheduled(a: AppointmentRecord, action: string): void {
  if (a.status === "canceled") throw fail("conflict", `the meeting is canceled: cannot ${action} it`);
}

/** A move that changes nothing is no move: no write, no event. */
export const isSameTime = (a: AppointmentRecord, m: Move) =>
  a.startAt.getTime() === m.startAt.getTime() &&
  a.endAt.getTime() === m.endAt.getTime() &&
  a.assigneeUserId === m.assigneeUserId;
