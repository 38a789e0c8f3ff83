import { SERVICES } from "@funil/contracts";
import { routesOf } from "@funil/rpc";
import type { InteractionStore } from "../store/interactions.js";
import type { SummaryStore } from "../store/summaries.js";
import { interactionService } from "./interactions.js";
import { summaryService } from "./summaries.js";

export interface TimelineDeps {
  interactions: InteractionStore;
  summaries: SummaryStore;
}

/** timeline's entry of SERVICES, implemented: every Connect service it serves. */
export function routes(deps: TimelineDeps) {
  return routesOf(SERVICES.timeline, {
    interactions: interactionService(deps),
    summaries: summaryService(deps),
  });
}
