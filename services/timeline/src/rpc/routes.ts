import { SERVICES } from "@funil/contracts";
import { routesOf } from "@funil/rpc";
import type { ErasureStore } from "../store/erasures.js";
import type { InteractionStore } from "../store/interactions.js";
import type { SummaryStore } from "../store/summaries.js";
import { interactionService } from "./interactions.js";
import { summaryService } from "./summaries.js";

export interface TimelineDeps {
  interactions: InteractionStore;
  summaries: SummaryStore;
  /** Applied from contact.erased by the events consumer; no RPC of its own. */
  erasures: ErasureStore;
}

/** timeline's entry of SERVICES, implemented: every Connect service it serves. */
export function routes(deps: TimelineDeps) {
  return routesOf(SERVICES.timeline, {
    interactions: interactionService(deps),
    summaries: summaryService(deps),
  });
}
