import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import { type CalendarService, CreateCalendarRequestSchema, ListSlotsRequestSchema } from "@funil/contracts";
import { originOf } from "@funil/db";
import { invalid, invalidReference, notFound } from "@funil/errors";
import { listAnswer, plainOf } from "@funil/rpc";
import { check, createCalendarBody, idParam, instant, slotsQuery } from "@funil/schemas";
import type { CrmDirectory } from "../crm.js";
import { localDayOf } from "../local-time.js";
import { freeSlots, type Slot, slotRange } from "../slots.js";
import type { AppointmentStore } from "../store/appointments.js";
import type { CalendarStore } from "../store/calendars.js";
import { calendarWire, slotToProto } from "./wire.js";

const PAGE_FIELDS = ["limit", "afterStartAt", "afterIndex"];
type FreeSlot = Slot & { assigneeUserId: string };

/**
 * The page of the free slots a request asks for, as the gateway pages a list it reads whole
 * (services/gateway/src/routes/v1/whole-list.ts): after the slot starting at afterStartAt or, when none
 * starts there any more, at the index afterIndex it had (where the slot after it moved); `limit` slots
 * (0: all). Only the page's slots become messages, and the first page stops the sweep one slot past its
 * end: a month of slots is thousands.
 */
function slotPage(
  req: { limit: number; afterStartAt?: string; afterIndex?: number },
  slotsUpTo: (max?: number) => FreeSlot[],
): { slots: FreeSlot[]; start: number; more: boolean } {
  const limit = req.limit > 0 ? req.limit : Number.POSITIVE_INFINITY;
  const after = req.afterStartAt === undefined ? undefined : Date.parse(req.afterStartAt);
  const all = slotsUpTo(after === undefined ? limit + 1 : undefined);
  let start = 0;
  if (after !== undefined) {
    const at = all.findIndex((s) => s.startAt.getTime() === after);
    start = at >= 0 ? at + 1 : Math.max(0, Math.trunc(req.afterIndex ?? 0));
  }
  const slots = all.slice(start, start + limit);
  return { slots, start, more: start + slots.length < all.length };
}

/** The zone's canonical IANA name (america/sao_paulo → America/Sao_Paulo). */
const canonicalZone = (tz: string) =>
  new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone;

export function calendarService(deps: {
  calendars: CalendarStore;
  appointments: AppointmentStore;
  crm: CrmDirectory;
  clock: Clock;
}): ServiceImpl<typeof CalendarService> {
  const { calendars, appointments, crm, clock } = deps;
  return {
    /** docs/api/admin.md §Routes: the assignees must be active members of the workspace (crm owns members). */
    async createCalendar(req, ctx) {
      const plain = plainOf(CreateCalendarRequestSchema, req);
      plain.availability = req.availability.map(({ weekday, start, end }) => ({ weekday, start, end }));
      const body = check(createCalendarBody, plain, "body");
      const active = await crm.activeMembers(req.workspaceId);
      const missing = body.assigneeUserIds.flatMap((id, i) =>
        active.has(id)
          ? []
          : [{ path: `assigneeUserIds.${i}`, message: `no active member ${id} in this workspace` }],
      );
      if (missing.length > 0) throw invalidReference(missing);
      const calendar = await calendars.create(
        req.workspaceId,
        {
          key: body.key,
          name: body.name.trim(),
          durationMin: body.durationMin,
          dailyCap: body.dailyCap,
          timezone: canonicalZone(body.timezone),
          slotIntervalMin: body.slotIntervalMin ?? body.durationMin,
          assigneeUserIds: body.assigneeUserIds,
          availability: body.availability,
        },
        clock.now(),
        originOf(ctx.requestHeader),
      );
      return { calendar: calendarWire.proto(calendar) };
    },

    async listCalendars(req) {
      return listAnswer(calendarWire, await calendars.list(req.workspaceId), req.apiJson);
    },

    async listSlots(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const query = check(
        slotsQuery,
        plainOf(ListSlotsRequestSchema, req, ["workspaceId", "id", ...PAGE_FIELDS]),
        "query",
      );
      if (req.limit < 0) throw invalid([{ path: "query.limit", message: "must not be negative" }], "query");
      const calendar = await calendars.get(req.workspaceId, id);
      if (!calendar) throw notFound("calendar");
      const range = slotRange(instant(query.from), instant(query.to), clock.now());
      const occupancy = await appointments.occupancy(req.workspaceId, calendar, range, {
        first: localDayOf(range.from, calendar.timezone),
        last: localDayOf(range.to, calendar.timezone),
      });
      const page = slotPage(req, (max) => freeSlots(calendar, range, occupancy, max));
      return { data: page.slots.map(slotToProto), start: page.start, more: page.more };
    },
  };
}
