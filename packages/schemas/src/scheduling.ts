import { z } from "zod";
import { cursor, limit, opt, ref, text, timestamp, title } from "./common.js";

/** A calendar's key: what GET /calendars shows and GET /appointments filters on (docs/api/conventions.md §Limits: 1 to 80). */
export const calendarKey = z.string().min(1, "must not be empty").max(80, "at most 80 characters");

/** An IANA zone the runtime knows (America/Sao_Paulo); offsets and abbreviations are refused. */
export const timezone = z
  .string()
  .max(64)
  .regex(/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/, "must be an IANA time zone, e.g. America/Sao_Paulo")
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, "unknown IANA time zone");

const clock = z.string().regex(/^(([01]\d|2[0-3]):[0-5]\d|24:00)$/, 'a local time "HH:MM" (00:00 to 24:00)');

export const availabilityWindow = z
  .strictObject({
    weekday: z.number().int().min(0, "0 (Sunday) to 6").max(6, "0 (Sunday) to 6"),
    start: clock,
    end: clock,
  })
  .refine((w) => w.start < w.end, { message: "start must be before end", path: ["end"] });

export const createCalendarBody = z
  .strictObject({
    key: calendarKey.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "letters, digits, _ . - only"),
    name: title(200, "name"),
    durationMin: z.number().int().min(5, "5 to 1440 minutes").max(1440, "5 to 1440 minutes"),
    dailyCap: z.number().int().min(1, "1 to 10000").max(10_000, "1 to 10000"),
    timezone,
    slotIntervalMin: z.number().int().min(5, "5 to 1440 minutes").max(1440, "5 to 1440 minutes").optional(),
    assigneeUserIds: z.array(ref).min(1, "at least one assignee").max(100, "at most 100 assignees"),
    availability: z.array(availabilityWindow).max(100, "at most 100 windows"),
  })
  .refine((c) => new Set(c.assigneeUserIds).size === c.assigneeUserIds.length, {
    message: "an assignee appears twice",
    path: ["assigneeUserIds"],
  })
  .meta({ id: "CalendarCreate" });

export const slotsQuery = z.strictObject({ from: timestamp.optional(), to: timestamp.optional() });

export const appointmentStatusFilter = z.enum(["scheduled", "canceled", "all"]);
export const appointmentStatus = z.enum(["scheduled", "canceled"]);
export const appointmentOutcome = z.enum(["realizada", "noshow", "reagendada"]);

export const listAppointmentsQuery = z.strictObject({
  from: timestamp.optional(),
  to: timestamp.optional(),
  status: appointmentStatusFilter.optional(),
  calendarKey: calendarKey.optional(),
  createdAfter: timestamp.optional(),
  updatedAfter: timestamp.optional(),
  outcome: appointmentOutcome.optional(),
  cursor: cursor.optional(),
  limit: limit(100),
});

export const createAppointmentBody = z
  .strictObject({
    calendarId: ref,
    contactId: ref,
    startAt: timestamp,
    assigneeUserId: ref,
    endAt: opt(timestamp),
    title: opt(text(500)),
    location: opt(text(500)),
    conferenceUrl: opt(text(2048)),
    opportunityId: opt(ref),
    source: opt(text(200)),
  })
  .meta({ id: "AppointmentCreate" });

export const cancelAppointmentBody = z
  .strictObject({ reason: opt(text(2000)) })
  .meta({ id: "AppointmentCancel" });

export const rescheduleAppointmentBody = z
  .strictObject({ startAt: timestamp, endAt: opt(timestamp), assigneeUserId: opt(ref) })
  .meta({ id: "AppointmentReschedule" });

export const outcomeBody = z.strictObject({ outcome: appointmentOutcome }).meta({ id: "AppointmentOutcome" });
