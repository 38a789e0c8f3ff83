import type { Clock } from "@funil/config";
import { type IdempotencyRequest, idempotencyKeyInUse, type Origin, rememberedFailure } from "@funil/db";
import { type ErrorDetail, fail, invalidReference } from "@funil/errors";
import { type createAppointmentBody, instant, type z } from "@funil/schemas";
import { type AppointmentRecord, type BookingDraft, noContact } from "./booking.js";
import type { CrmDirectory } from "./crm.js";
import { appointmentWire } from "./rpc/wire.js";
import { placeOnGrid, type Slot } from "./slots.js";
import type { AppointmentStore } from "./store/appointments.js";
import type { Checked } from "./store/bookings.js";
import type { CalendarRecord, CalendarStore } from "./store/calendars.js";
import type { BookingGuard } from "./store/guard.js";

/**
 * Booking a meeting (docs/api/meetings.md §POST /appointments), step by step: check the request (its
 * calendar and slot here, its contact and deal at crm), hold the time in Redis, book in PostgreSQL.
 * Every call that leaves the process (crm, Redis) is made before or after the booking's transaction,
 * never inside it (docs/architecture.md §Rules that keep it real).
 */

export type BookingBody = z.output<typeof createAppointmentBody>;

export interface BookingDeps {
  appointments: AppointmentStore;
  calendars: CalendarStore;
  guard: BookingGuard;
  crm: CrmDirectory;
  clock: Clock;
}

/** A booking's answer: the meeting booked now, or what an Idempotency-Key remembered (as the API shows it). */
export type Booking =
  | { replayed: false; meeting: AppointmentRecord }
  | { replayed: true; remembered: unknown };

/** The request's references: the calendar's first (its failures come first), crm's answers beside it. */
async function references(deps: BookingDeps, workspaceId: string, body: BookingBody, now: Date) {
  // crm is asked at once, beside the calendar's read; its answers are looked at after the calendar's checks.
  const atCrm = Promise.all([
    deps.crm.contact(workspaceId, body.contactId),
    body.opportunityId ? deps.crm.opportunityExists(workspaceId, body.opportunityId) : true,
  ]);
  atCrm.catch(() => {});
  const calendar = await deps.calendars.get(workspaceId, body.calendarId);
  if (!calendar)
    throw invalidReference([
      { path: "calendarId", message: `no calendar ${body.calendarId} in this workspace` },
    ]);
  const slot = placeOnGrid(calendar, instant(body.startAt), instant(body.endAt) ?? undefined, now);
  const [contact, opportunityFound] = await atCrm;
  return { calendar, slot, contact, opportunityFound };
}

/** Every reference that does not hold, named at once (422 invalid_reference). */
function mustHoldReferences(
  body: BookingBody,
  found: { calendar: CalendarRecord; contact: unknown; opportunityFound: boolean },
) {
  const problems: ErrorDetail[] = [];
  if (!found.calendar.assigneeUserIds.includes(body.assigneeUserId))
    problems.push({ path: "assigneeUserId", message: "not an assignee of this calendar" });
  if (!found.contact) problems.push(noContact(body.contactId));
  if (!found.opportunityFound)
    problems.push({
      path: "opportunityId",
      message: `no opportunity ${body.opportunityId} in this workspace`,
    });
  if (problems.length > 0) throw invalidReference(problems);
}

/** The draft of a request whose references hold. */
function draftOf(
  body: BookingBody,
  calendar: CalendarRecord,
  slot: Slot,
  contactName: string | null,
): BookingDraft {
  return {
    calendarId: calendar.id,
    calendarKey: calendar.key,
    dailyCap: calendar.dailyCap,
    contactId: body.contactId,
    contactName,
    opportunityId: body.opportunityId ?? null,
    title: body.title ?? null,
    location: body.location ?? null,
    conferenceUrl: body.conferenceUrl ?? null,
    source: body.source ?? null,
    assigneeUserId: body.assigneeUserId,
    startAt: slot.startAt,
    endAt: slot.endAt,
    localDay: slot.day,
  };
}

/** A booking request checked: its calendar, its slot, and its references (crm's contact and deal). */
async function checkBooking(deps: BookingDeps, workspaceId: string, body: BookingBody, now: Date) {
  const found = await references(deps, workspaceId, body, now);
  mustHoldReferences(body, found);
  return draftOf(body, found.calendar, found.slot, found.contact!.name);
}

/**
 * Redis turns contention away first (one attempt per assignee and time, a
 * counter per day); PostgreSQL decides what gets through. A "full" from
 * Redis is believed only when PostgreSQL's count agrees.
 */
async function underHold(
  deps: BookingDeps,
  workspaceId: string,
  d: BookingDraft,
  book: () => Promise<AppointmentRecord>,
) {
  const count = () => deps.appointments.dayCount(d.calendarId, d.localDay);
  const hold = await deps.guard.hold(
    workspaceId,
    d.assigneeUserId,
    d.startAt,
    d.calendarId,
    d.localDay,
    d.dailyCap,
    count,
  );
  if (hold === "taken") throw fail("slot_taken", "the assignee's time is being booked by another request");
  let booked = false;
  try {
    if (hold.full && (await count()) >= d.dailyCap)
      throw fail("daily_cap_reached", "this calendar's day is at its cap of meetings");
    const meeting = await book();
    booked = true;
    return meeting;
  } finally {
    await hold.release(booked);
  }
}

/**
 * Under an Idempotency-Key (docs/api/conventions.md §Idempotency-Key): what the key already answers
 * is read first (a replay asks crm nothing); the key is held in Redis while the request is checked
 * outside any transaction (a copy sent meanwhile is 409 at once); then the key's claim commits with
 * the meeting, or with the check's failure, in one transaction that only speaks SQL and decides alone
 * when Redis is away. The meeting goes straight to PostgreSQL (its exclusion constraint and day check
 * decide); Redis's counter of the day is dropped after, to be rebuilt from PostgreSQL.
 */
async function bookOnce(
  deps: BookingDeps,
  body: BookingBody,
  request: IdempotencyRequest,
  now: Date,
  by: Origin,
): Promise<Booking> {
  const earlier = await deps.appointments.rememberedAnswer(request, now);
  if (earlier) return { replayed: true, remembered: earlier.ok };
  const release = await deps.guard.claimKey(request.workspaceId, request.key);
  if (release === "taken") throw idempotencyKeyInUse();
  try {
    const result = await deps.appointments.bookOnce(
      request,
      await checked(deps, body, request, now),
      now,
      by,
      appointmentWire.json,
    );
    if (result.replayed) return { replayed: true, remembered: result.ok };
    await deps.guard.forgetDays(result.value.calendarId, [result.value.localDay]);
    return { replayed: false, meeting: result.value };
  } finally {
    await release();
  }
}

/** The request checked: its draft, or the failure its key is to remember; any other failure is thrown. */
function checked(
  deps: BookingDeps,
  body: BookingBody,
  request: IdempotencyRequest,
  now: Date,
): Promise<Checked> {
  return checkBooking(deps, request.workspaceId, body, now).then(
    (draft) => ({ draft }),
    (err: unknown) => {
      if (!rememberedFailure(err)) throw err;
      return { failed: err };
    },
  );
}

/** The booking use case over its dependencies: book(workspace, checked body, who asks, the key's request if any). */
export function bookAppointment(deps: BookingDeps) {
  return async (
    workspaceId: string,
    body: BookingBody,
    by: Origin,
    key?: IdempotencyRequest,
  ): Promise<Booking> => {
    const now = deps.clock.now();
    if (key) return bookOnce(deps, body, key, now, by);
    const draft = await checkBooking(deps, workspaceId, body, now);
    const meeting = await underHold(deps, workspaceId, draft, () =>
      deps.appointments.book(workspaceId, draft, now, by),
    );
    return { replayed: false, meeting };
  };
}
