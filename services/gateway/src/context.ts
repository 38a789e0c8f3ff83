import type { Client } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import type {
  ContactService,
  CustomFieldService,
  FunnelService,
  HealthService,
  MemberService,
  NoteService,
  OpportunityService,
  PipelineService,
  TaskService,
} from "@funil/contracts";
import type { Sql } from "@funil/db";
import type { Redis } from "ioredis";
import type { GatewayConfig } from "./config.js";
import type { KeyResolver } from "./key-cache.js";
import type { KeyStore } from "./store/keys.js";

/** Everything the routes use, handed to the app by server.ts (or a test). */
export interface GatewayContext {
  config: GatewayConfig;
  clock: Clock;
  sql: Sql;
  redis: Redis;
  keys: KeyResolver;
  keyStore: KeyStore;
  crm: {
    contacts: Client<typeof ContactService>;
    customFields: Client<typeof CustomFieldService>;
    members: Client<typeof MemberService>;
    pipelines: Client<typeof PipelineService>;
    opportunities: Client<typeof OpportunityService>;
    funnel: Client<typeof FunnelService>;
    tasks: Client<typeof TaskService>;
    notes: Client<typeof NoteService>;
    health: Client<typeof HealthService>;
  };
}
