import { baseEnv, port, z } from "@funil/config";

export const crmConfig = baseEnv.extend({
  CRM_PORT: port.default(7001),
  HOST: z.string().default("127.0.0.1"),
});
export type CrmConfig = z.output<typeof crmConfig>;
