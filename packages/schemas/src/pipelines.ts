import { z } from "zod";
import { title } from "./common.js";

export const createPipelineBody = z.strictObject({
  name: title(200, "name"),
  stages: z
    .array(z.strictObject({ name: title(200, "a stage's name") }))
    .min(1, "a pipeline needs at least one stage")
    .max(50, "at most 50 stages"),
});
