import { create } from "@bufbuild/protobuf";
import {
  type Appointment,
  AppointmentSchema,
  CalendarSchema,
  type Slot as SlotMessage,
  SlotSchema,
} from "@funil/contracts";
import { wireOf } from "@funil/rpc";
import { isoString } from "@funil/schemas";
import type { AppointmentRecord } from "../booking.js";
import type { Slot } from "../slots.js";
import type { CalendarRecord } from "../store/calendars.js";

/**
 * Records as the contracts' messages: the one place that knows both. A
 * meeting's reply, its event and a remembered Idempotency-Key result share
 * one encoding (wireOf).
 */

/** A record's null is an unset optional field on the wire (the API shows it as null again). */
const absent = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

/**
 * Written as a literal with its $typeName, not through create(), whose walk of the descriptor for every
 * field showed in the profile of a page of 100 meetings (as crm's list pages: services/crm/src/rpc/wire.ts).
 */
export const appointmentWire = wireOf(
  AppointmentSchema,
  (r: AppointmentRecord): Appointment => ({
    $typeName: "funil.scheduling.v1.Appointment",
    id: r.id,
    contactId: r.contactId,
    opportunityId: absent(r.opportunityId),
    contactName: absent(r.contactName),
    title: absent(r.title),
    location: absent(r.location),
    conferenceUrl: absent(r.conferenceUrl),
    startAt: isoString(r.startAt),
    endAt: isoString(r.endAt),
    calendarId: r.calendarId,
    calendarKey: r.calendarKey,
    assigneeUserId: r.assigneeUserId,
    status: r.status,
    outcome: absent(r.outcome),
    source: absent(r.source),
    createdAt: isoString(r.createdAt),
    updatedAt: isoString(r.updatedAt),
    createdByUserId: absent(r.createdByUserId),
    createdBySource: r.createdBySource,
    canceledAt: isoString(r.canceledAt),
    cancelReason: absent(r.cancelReason),
    outcomeAt: isoString(r.outcomeAt),
    recoveredFromAppointmentId: absent(r.recoveredFromAppointmentId),
  }),
);

/** A calendar's message and API JSON, each made once per record (the store keeps calendars in memory). */
export const calendarWire = wireOf(CalendarSchema, (c: CalendarRecord) =>
  create(CalendarSchema, {
    id: c.id,
    key: c.key,
    name: c.name,
    durationMin: c.durationMin,
    dailyCap: c.dailyCap,
    timezone: c.timezone,
    slotIntervalMin: c.slotIntervalMin,
    assigneeUserIds: c.assigneeUserIds,
    availability: c.availability,
  }),
);

/**
 * A slot as its message, written out: a month of slots is thousands of them,
 * and every field is set, so create()'s reflective fill of defaults buys nothing.
 */
export const slotToProto = (s: Slot & { assigneeUserId: string }): SlotMessage => ({
  $typeName: SlotSchema.typeName as SlotMessage["$typeName"],
  startAt: isoString(s.startAt),
  endAt: isoString(s.endAt),
  assigneeUserId: s.assigneeUserId,
});
