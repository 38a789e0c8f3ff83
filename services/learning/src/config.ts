import { baseEnv, port, z } from "@funil/config";

export const learningConfig = baseEnv.extend({
  LEARNING_PORT: port.default(7005),
  HOST: z.string().default("127.0.0.1"),
});
export type LearningConfig = z.output<typeof learningConfig>;
