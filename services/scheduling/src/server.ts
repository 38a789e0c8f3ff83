import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import { SERVICES } from "@funil/contracts";
import { changeEmitter } from "@funil/db";
import { openRedis } from "@funil/db/redis";
import { clientsOf, consumeErasures, type Infra, rpcOptions, startService } from "@funil/rpc";
import type { Redis } from "ioredis";
import type { SchedulingConfig } from "./config.js";
import { type CrmDirectory, crmDirectory } from "./crm.js";
import { routes, type SchedulingDeps } from "./rpc/routes.js";
import { appointmentWire, calendarWire } from "./rpc/wire.js";
import { appointmentStore } from "./store/appointments.js";
import { calendarStore } from "./store/calendars.js";
import { erasureStore } from "./store/erasures.js";
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
    calendars: calendarStore(
      sql,
      changeEmitter(infra.emit, calendarWire.json, (c) => c.createdAt),
    ),
    appointments: appointmentStore(
      sql,
      changeEmitter(infra.emit, appointmentWire.json, (m) => m.updatedAt),
    ),
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
    wire: async (infra) => {
      const redis = openRedis(config.REDIS_URL, infra.log, "bookings go on under PostgreSQL's guards alone");
      const deps = schedulingDeps(
        infra,
        { client: redis, prefix: `funil:${config.FUNIL_ENV ?? "default"}:scheduling:` },
        crmDirectory(clientsOf(SERVICES.crm, config.CRM_URL, config.UPSTREAM_TIMEOUT_MS, rpcOptions(config))),
      );
      const erasures = await consumeErasures(infra, "scheduling-erasures", erasureStore(infra.sql).erase);
      return {
        routes: routes(deps),
        consumers: [erasures],
        dependencies: async () => [await deps.guard.check()],
        // Bookings in flight still ask the guard: Redis goes once the server has answered them.
        release: async () => {
          redis.disconnect();
        },
        stop: () => erasures.stop(),
      };
    },
  });
  return service;
}
