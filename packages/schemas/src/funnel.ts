import { z } from "zod";
import { ref, timestamp } from "./common.js";

export const funnelQuery = z.strictObject({
  pipelineId: ref.optional(),
  from: timestamp.optional(),
  to: timestamp.optional(),
});
