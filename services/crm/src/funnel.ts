import type { ErrorDetail } from "@funil/errors";

/** [from, to) on createdAt; an absent bound is open. */
export interface FunnelRange {
  from?: Date;
  to?: Date;
}

export interface Tally {
  count: number;
  valueCents: number;
}

export interface StageTally extends Tally {
  stageId: string;
  name: string;
}

/** What the two aggregate queries of the funnel return. */
export interface FunnelRows {
  /** Every stage, in pipeline then stage order, zero rows included: deals created in the range. */
  stages: StageTally[];
  /** Deals created in the range, by status, and deals closed in the range (by wonAt / lostAt). */
  byStatus: Record<"open" | "won" | "lost", Tally>;
  closedInRange: Record<"won" | "lost", Tally>;
}

export interface FunnelSummary {
  from: string | null;
  to: string | null;
  pipelineId: string | null;
  total: Tally;
  byStage: StageTally[];
  byStatus: Record<"open" | "won" | "lost", Tally>;
  closedInRange: Record<"won" | "lost", Tally>;
}

export function checkRange(range: FunnelRange): ErrorDetail[] {
  if (range.from && range.to && range.from.getTime() > range.to.getTime())
    return [{ path: "from", message: "from must not be later than to" }];
  return [];
}

/**
 * The funnel summary (docs/api/deals.md §GET /funnel): total, byStage and byStatus
 * count the deals created in [from, to); closedInRange counts the deals won
 * or lost inside the range whenever they were created. The total is the sum
 * of byStatus: every deal has exactly one status.
 */
export function summarize(
  range: FunnelRange,
  pipelineId: string | undefined,
  rows: FunnelRows,
): FunnelSummary {
  const { open, won, lost } = rows.byStatus;
  return {
    from: range.from?.toISOString() ?? null,
    to: range.to?.toISOString() ?? null,
    pipelineId: pipelineId ?? null,
    total: {
      count: open.count + won.count + lost.count,
      valueCents: open.valueCents + won.valueCents + lost.valueCents,
    },
    byStage: rows.stages,
    byStatus: rows.byStatus,
    closedInRange: rows.closedInRange,
  };
}
