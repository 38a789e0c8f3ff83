import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import { startService } from "@funil/rpc";
import type { LearningConfig } from "./config.js";
import { startPlatformConsumer } from "./events/platform.js";
import { routes } from "./rpc/routes.js";
import { learnerStore } from "./store/learners.js";
import { platformStore } from "./store/platform.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/** learning: platform data from the PLATFORM stream and bulk import, read-only learner usage. */
export function start(config: LearningConfig, clock: Clock) {
  return startService({
    name: "learning",
    config,
    port: config.LEARNING_PORT,
    clock,
    migrations,
    wire: async (infra) => {
      const consumer = await startPlatformConsumer({
        nc: infra.nc,
        names: infra.names,
        store: platformStore(infra.sql),
        log: infra.log,
      });
      return {
        routes: routes({ learners: learnerStore(infra.sql), clock }),
        stop: consumer.stop,
        consumers: [consumer],
      };
    },
  });
}
