import { z } from "zod";
import { page } from "./common.js";

export const pipeline = z
  .object({
    id: z.string(),
    name: z.string(),
    stages: z.array(z.object({ id: z.string(), name: z.string(), position: z.number().int() })),
  })
  .meta({ id: "Pipeline" });

export const pipelineList = page(pipeline);

export const createPipelineBody = z.strictObject({
  name: z.string().trim().min(1, "name must not be empty").max(200),
  stages: z
    .array(z.strictObject({ name: z.string().trim().min(1, "a stage needs a name").max(200) }))
    .min(1, "a pipeline needs at least one stage")
    .max(50, "at most 50 stages"),
});
