import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import { SERVICES } from "@funil/contracts";
import { changedFields, type EventInput } from "@funil/db";
import { openRedis } from "@funil/db/redis";
import { clientsOf, type Infra, rpcOptions, startService } from "@funil/rpc";
import type { Redis } from "ioredis";
import type { AppointmentRecord } from "./booking.js";
import type { SchedulingConfig } from "./config.js";
import { type CrmDirectory, crmDirectory } from "./crm.js";
import { routes, type SchedulingDeps } from "./rpc/routes.js";
import { appointmentWire } from "./rpc/wire.js";
import { appointmentStore } from "./store/appointments.js";
import { calendarStore } from "./store/calendars.js";
import { bookingGuard } from "./store/guard.js";

export const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/** The stores on one database, the booking guard on one Redis, crm behind its directory. */
export function schedulingDeps(
  infra: Pick<Infra, "sql" | "emit" | "clock">,
  redis: { client: Redis; prefix: string },
  crm: CrmDirectory,
): SchedulingDeps {
  const { sql, clock } = infra;
  return {
    sql,
    calendars: calendarStore(sql),
    appointments: appointmentStore(sql, (tx, type, meeting, by, before) => {
      const data = appointmentWire.json(meeting);
      // Who made the change and the fields it set or changed (docs/api/events.md §Who made a change).
      const event: EventInput = {
        type,
        workspaceId: meeting.workspaceId,
        occurredAt: meeting.updatedAt,
        data,
        origin: by,
        changes: changedFields(
          data,
          before === undefined || Array.isArray(before)
            ? before
            : appointmentWire.json(before as AppointmentRecord),
        ),
      };
      return infra.emit(tx, event);
    }),
    guard: bookingGuard({ redis: redis.client, prefix: redis.prefix }),
    crm,
    clock,
  };
}

/** scheduling: calendars, slots and meetings. */
export async function start(config: SchedulingConfig, clock: Clock) {
  const service = await startService({
    name: "scheduling",
    config,
    port: config.SCHEDULING_PORT,
    clock,
    migrations,
    wire: (infra) => {
      const redis = openRedis(config.REDIS_URL, infra.log, "bookings go on under PostgreSQL's guards alone");
      const deps = schedulingDeps(
        infra,
        { client: redis, prefix: `funil:${config.FUNIL_ENV ?? "default"}:scheduling:` },
        crmDirectory(clientsOf(SERVICES.crm, config.CRM_URL, config.UPSTREAM_TIMEOUT_MS, rpcOptions(config))),
      );
      return {
        routes: routes(deps),
        dependencies: async () => [await deps.guard.check()],
        // Bookings in flight still ask the guard: Redis goes once the server has answered them.
        release: async () => {
          redis.disconnect();
        },
      };
    },
  });
  return service;
}
