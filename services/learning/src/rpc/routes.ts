import type { Clock } from "@funil/config";
import { SERVICES } from "@funil/contracts";
import { routesOf } from "@funil/rpc";
import type { LearnerStore } from "../store/learners.js";
import { learnerService } from "./learners.js";

export interface LearningDeps {
  learners: LearnerStore;
  clock: Clock;
}

/** learning's entry of SERVICES, implemented. */
export function routes(deps: LearningDeps) {
  return routesOf(SERVICES.learning, { learners: learnerService(deps) });
}
