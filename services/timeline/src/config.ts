import { baseEnv, port, z } from "@funil/config";

export const timelineConfig = baseEnv.extend({
  TIMELINE_PORT: port.default(7003),
  HOST: z.string().default("127.0.0.1"),
});
export type TimelineConfig = z.output<typeof timelineConfig>;
