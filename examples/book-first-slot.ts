/**
 * Books a contact on the first free slot of a calendar: the calendar's slots (GET
 * /calendars/{id}/slots, each naming the assignee round-robin picks), booked under an Idempotency-Key,
 * moving on to the next slot when another booking took this one first (409 slot_taken).
 */
import { type Funil, FunilError } from "@funil/client";

export async function bookFirstSlot(opts: {
  funil: Funil;
  calendarId: string;
  contactId: string;
  title?: string;
  /** Start of the search; default now (the API's default range is the next 7 days). */
  from?: Date;
}) {
  const slots = opts.funil.list("listCalendarSlots", {
    params: { path: { id: opts.calendarId }, query: opts.from ? { from: opts.from.toISOString() } : {} },
    pageSize: 50,
  });
  for await (const slot of slots) {
    try {
      return await opts.funil.createAppointment({
        body: {
          calendarId: opts.calendarId,
          contactId: opts.contactId,
          assigneeUserId: slot.assigneeUserId,
          startAt: slot.startAt,
          title: opts.title,
        },
      });
    } catch (err) {
      if (err instanceof FunilError && (err.code === "slot_taken" || err.code === "invalid_slot")) continue;
      throw err;
    }
  }
  throw new Error("no free slot in the calendar's range");
}
