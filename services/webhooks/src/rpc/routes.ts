import { SERVICES } from "@funil/contracts";
import { routesOf } from "@funil/rpc";
import { type WebhookDeps, webhookService } from "./webhooks.js";

/** webhooks' entry of SERVICES, implemented. */
export function routes(deps: WebhookDeps) {
  return routesOf(SERVICES.webhooks, { webhooks: webhookService(deps) });
}
