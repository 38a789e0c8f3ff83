import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import type { Sql } from "@funil/db";
import { startService } from "@funil/rpc";
import type { TimelineConfig } from "./config.js";
import { startConsumers } from "./events/consumers.js";
import { routes, type TimelineDeps } from "./rpc/routes.js";
import { erasureStore } from "./store/erasures.js";
import { interactionStore } from "./store/interactions.js";
import { summaryStore } from "./store/summaries.js";

export const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

export function timelineDeps(sql: Sql): TimelineDeps {
  return { interactions: interactionStore(sql), summaries: summaryStore(sql), erasures: erasureStore(sql) };
}

/** timeline: interactions from every source, human touches, and the activity ledger of deals. */
export function start(config: TimelineConfig, clock: Clock) {
  return startService({
    name: "timeline",
    config,
    port: config.TIMELINE_PORT,
    clock,
    migrations,
    wire: async (infra) => {
      const deps = timelineDeps(infra.sql);
      const consumers = await startConsumers(infra, deps);
      return {
        routes: routes(deps),
        consumers,
        stop: async () => {
          await Promise.all(consumers.map((c) => c.stop()));
        },
      };
    },
  });
}
