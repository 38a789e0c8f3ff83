import type { Clock } from "@funil/config";
import { SERVICES } from "@funil/contracts";
import type { Sql } from "@funil/db";
import { routesOf } from "@funil/rpc";
import type { CrmDirectory } from "../crm.js";
import type { AppointmentStore } from "../store/appointments.js";
import type { CalendarStore } from "../store/calendars.js";
import type { BookingGuard } from "../store/guard.js";
import { appointmentService } from "./appointments.js";
import { calendarService } from "./calendars.js";

export interface SchedulingDeps {
  /** The database of the stores, where Idempotency-Keys are claimed. */
  sql: Sql;
  calendars: CalendarStore;
  appointments: AppointmentStore;
  guard: BookingGuard;
  crm: CrmDirectory;
  clock: Clock;
}

/** scheduling's entry of SERVICES, implemented: every Connect service it serves. */
export function routes(deps: SchedulingDeps) {
  return routesOf(SERVICES.scheduling, {
    calendars: calendarService(deps),
    appointments: appointmentService(deps),
  });
}
