import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import { SERVICES } from "@funil/contracts";
import { clientsOf, rpcOptions, startService } from "@funil/rpc";
import { Redis } from "ioredis";
import type { SchedulingConfig } from "./config.js";
import { crmDirectory } from "./crm.js";
import { routes } from "./rpc/routes.js";
import { appointmentWire } from "./rpc/wire.js";
import { appointmentStore } from "./store/appointments.js";
import { calendarStore } from "./store/calendars.js";
import { bookingGuard } from "./store/guard.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * Redis for the booking guard: no offline queue and a short command timeout,
 * so an outage fails fast and bookings go on under PostgreSQL's guards.
 */
function guardRedis(url: string) {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: 300,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  // ioredis reports every failed reconnection as an "error" event, from the first connection on (before
  // the service is wired); the guard logs the outage once.
  redis.on("error", () => {});
  return redis;
}

/** scheduling: calendars, slots and meetings. */
export async function start(config: SchedulingConfig, clock: Clock) {
  const redis = guardRedis(config.REDIS_URL);
  const service = await startService({
    name: "scheduling",
    config,
    port: config.SCHEDULING_PORT,
    clock,
    migrations,
    wire: (infra) => {
      const { sql } = infra;
      const guard = bookingGuard({
        redis,
        prefix: `funil:${config.FUNIL_ENV ?? "default"}:scheduling:`,
        log: infra.log,
      });
      return {
        routes: routes({
          sql,
          calendars: calendarStore(sql),
          appointments: appointmentStore(sql, (tx, type, meeting) =>
            infra.emit(tx, {
              type,
              workspaceId: meeting.workspaceId,
              occurredAt: meeting.updatedAt,
              data: appointmentWire.json(meeting),
            }),
          ),
          guard,
          crm: crmDirectory(
            clientsOf(SERVICES.crm, config.CRM_URL, config.UPSTREAM_TIMEOUT_MS, rpcOptions(config)),
          ),
          clock,
        }),
        dependencies: async () => [await guard.check()],
        // Bookings in flight still ask the guard: Redis goes once the server has answered them.
        release: async () => {
          redis.disconnect();
        },
      };
    },
  });
  return service;
}
