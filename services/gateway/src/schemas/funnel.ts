import { z } from "zod";
import { timestamp } from "./common.js";
import { ref } from "./deals.js";

const tally = z.object({ count: z.number().int(), valueCents: z.number().int() });

export const funnelQuery = z.strictObject({
  pipelineId: ref.optional(),
  from: timestamp.optional(),
  to: timestamp.optional(),
});

export const funnel = z
  .object({
    from: z.string().nullable(),
    to: z.string().nullable(),
    pipelineId: z.string().nullable(),
    total: tally,
    byStage: z.array(
      z.object({
        stageId: z.string(),
        name: z.string(),
        count: z.number().int(),
        valueCents: z.number().int(),
      }),
    ),
    byStatus: z.object({ open: tally, won: tally, lost: tally }),
    closedInRange: z.object({ won: tally, lost: tally }),
  })
  .meta({ id: "Funnel" });
