import type { Touches } from "@funil/contracts";

/** The human touches of a single read (SPEC.md §2): null = none identified. */
export const touchesJson = (t: Touches | undefined) => ({
  firstHumanTouchAt: t?.firstHumanTouchAt ?? null,
  lastHumanTouchAt: t?.lastHumanTouchAt ?? null,
});
