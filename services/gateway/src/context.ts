import type { Clock } from "@funil/config";
import type { SERVICES } from "@funil/contracts";
import type { Sql } from "@funil/db";
import type { Clients } from "@funil/rpc";
import type { Redis } from "ioredis";
import type { GatewayConfig } from "./config.js";
import type { KeyResolver } from "./key-cache.js";
import type { KeyStore } from "./store/keys.js";

/** One typed client per Connect service of every backend service (SERVICES in @funil/contracts). */
export type ServiceClients = { [N in keyof typeof SERVICES]: Clients<(typeof SERVICES)[N]> };

/** Everything the routes use, handed to the app by server.ts (or a test). */
export interface GatewayContext extends ServiceClients {
  config: GatewayConfig;
  clock: Clock;
  sql: Sql;
  redis: Redis;
  keys: KeyResolver;
  keyStore: KeyStore;
}
