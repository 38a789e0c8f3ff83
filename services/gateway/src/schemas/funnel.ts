import { z } from "zod";
import { timestamp } from "./common.js";
import { ref } from "./deals.js";

/**
 * A sum of deals' valueCents: each is at most 2^53 − 1, so a sum may pass it (found by the generated
 * tests); it is then the nearest double, as any JSON number that large.
 */
const sumCents = z.number().meta({ type: "integer", minimum: 0 });
const tally = z.object({ count: z.number().int(), valueCents: sumCents });

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
        valueCents: sumCents,
      }),
    ),
    byStatus: z.object({ open: tally, won: tally, lost: tally }),
    closedInRange: z.object({ won: tally, lost: tally }),
  })
  .meta({ id: "Funnel" });
