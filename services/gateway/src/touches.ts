import type { Touches } from "@funil/contracts";

/** The human touches of a single read (docs/api/contacts.md §GET /contacts/{id}): null = none identified. */
export const touchesJson = (t: Touches | undefined) => ({
  firstHumanTouchAt: t?.firstHumanTouchAt ?? null,
  lastHumanTouchAt: t?.lastHumanTouchAt ?? null,
});
