import { baseEnv, port, z } from "@funil/config";

export const timelineConfig = baseEnv.extend({
  TIMELINE_PORT: port.default(7002),
  HOST: z.string().default("127.0.0.1"),
});
export type TimelineConfig = z.output<typeof timelineConfig>;
