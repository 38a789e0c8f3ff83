import { baseEnv, port, rpcUrl, z } from "@funil/config";

export const schedulingConfig = baseEnv.extend({
  SCHEDULING_PORT: port.default(7003),
  HOST: z.string().default("127.0.0.1"),
  /** crm owns contacts, deals and members: bookings and calendars check them there. */
  CRM_URL: rpcUrl.default("http://127.0.0.1:7001"),
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
});
export type SchedulingConfig = z.output<typeof schedulingConfig>;
