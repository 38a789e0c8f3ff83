import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import { type CalendarService, CreateCalendarRequestSchema, ListSlotsRequestSchema } from "@funil/contracts";
import { originOf } from "@funil/db";
import { invalidReference, notFound } from "@funil/errors";
import { plainOf } from "@funil/rpc";
import { check, createCalendarBody, idParam, instant, slotsQuery } from "@funil/schemas";
import type { CrmDirectory } from "../crm.js";
import { localDayOf } from "../local-time.js";
import { freeSlots, slotRange } from "../slots.js";
import type { AppointmentStore } from "../store/appointments.js";
import type { CalendarStore } from "../store/calendars.js";
import { calendarToProto, slotToProto } from "./wire.js";

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
      return { calendar: calendarToProto(calendar) };
    },

    async listCalendars(req) {
      return { data: (await calendars.list(req.workspaceId)).map(calendarToProto) };
    },

    async listSlots(req) {
      const { id } = check(idParam, { id: req.id }, "path");
      const query = check(slotsQuery, plainOf(ListSlotsRequestSchema, req, ["workspaceId", "id"]), "query");
      const calendar = await calendars.get(req.workspaceId, id);
      if (!calendar) throw notFound("calendar");
      const range = slotRange(instant(query.from), instant(query.to), clock.now());
      const occupancy = await appointments.occupancy(req.workspaceId, calendar, range, {
        first: localDayOf(range.from, calendar.timezone),
        last: localDayOf(range.to, calendar.timezone),
      });
      return { data: freeSlots(calendar, range, occupancy).map(slotToProto) };
    },
  };
}
