import { SERVICES } from "@funil/contracts";
import type { Sql } from "@funil/db";
import { routesOf } from "@funil/rpc";
import type { BookingDeps } from "../book-appointment.js";
import { appointmentService } from "./appointments.js";
import { calendarService } from "./calendars.js";

/**
 * What scheduling's services are built on: the booking's dependencies, and the database where the
 * meetings' other writes claim their Idempotency-Keys.
 */
export type SchedulingDeps = BookingDeps & { sql: Sql };

/** scheduling's entry of SERVICES, implemented: every Connect service it serves. */
export function routes(deps: SchedulingDeps) {
  return routesOf(SERVICES.scheduling, {
    calendars: calendarService(deps),
    appointments: appointmentService(deps),
  });
}
