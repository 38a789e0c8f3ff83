import { fileURLToPath } from "node:url";
import type { Clock } from "@funil/config";
import { AuthService } from "@funil/contracts";
import { changeEmitter, type Sweep } from "@funil/db";
import { consumeErasures, type Infra, rpcClient, rpcOptions, startService } from "@funil/rpc";
import type { WebhooksConfig } from "./config.js";
import { loggedUpTo } from "./events/event-log.js";
import { startFanOut } from "./events/fanout.js";
import { startSender } from "./events/sender.js";
import { threadPoster } from "./poster-thread.js";
import { routes } from "./rpc/routes.js";
import type { WebhookDeps } from "./rpc/webhooks.js";
import { subscriptionWire } from "./rpc/wire.js";
import { secretBox } from "./secrets.js";
import { attemptStore } from "./store/attempts.js";
import { deliveryStore } from "./store/deliveries.js";
import { erasureStore } from "./store/erasures.js";
import { eventLogStore } from "./store/event-log.js";
import { type EmitResent, type Resent, resendStore } from "./store/resend.js";
import { type EmitSubscriptionEvent, subscriptionStore } from "./store/subscriptions.js";

export const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * A subscription's internal events (docs/api/events.md §Who made a change): `data` is the subscription as
 * the API returns it, never its secret.
 */
export const subscriptionEvents = (emit: Infra["emit"]): EmitSubscriptionEvent =>
  changeEmitter(emit, subscriptionWire.json, (s) => s.updatedAt);

/** A resend's or a recover's internal event: the subscription's id and the deliveries put back in line. */
export const resentEvents = (emit: Infra["emit"]): EmitResent =>
  changeEmitter(
    emit,
    (r: Resent) => ({ id: r.id, deliveryIds: r.deliveryIds }),
    (r) => r.updatedAt,
  );

/** The stores and collaborators of the handlers, on one database. */
export function webhookDeps(
  infra: Pick<Infra, "sql" | "names" | "clock" | "nc" | "emit">,
  config: WebhooksConfig,
  auth: WebhookDeps["auth"],
): WebhookDeps {
  const subject = (id: string) => infra.names.subject(`webhook.deliveries.${id}`);
  return {
    sql: infra.sql,
    subscriptions: subscriptionStore(infra.sql, subscriptionEvents(infra.emit)),
    deliveries: deliveryStore(infra.sql, subject, subscriptionEvents(infra.emit)),
    resends: resendStore(infra.sql, subject, resentEvents(infra.emit)),
    attempts: attemptStore(infra.sql),
    events: eventLogStore(infra.sql),
    loggedUpTo: loggedUpTo(infra.nc, infra.names),
    auth,
    secrets: secretBox(config.WEBHOOK_SECRET_KEY),
    targets: { allowHttp: config.WEBHOOK_ALLOW_HTTP, allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS },
    clock: infra.clock,
  };
}

/** The deliveries that are over, kept WEBHOOK_DELIVERY_RETENTION_DAYS (docs/operations.md §Retention). */
export const deliverySweep = (deliveries: WebhookDeps["deliveries"], days: number): Sweep => ({
  name: "webhook deliveries",
  run: (_sql, now) => deliveries.sweep(new Date(now.getTime() - days * 86_400_000)),
});

/** The attempt log's retention (docs/api/webhooks.md §Attempt log), swept with the service's others. */
export const attemptSweep = (attempts: WebhookDeps["attempts"], days: number): Sweep => ({
  name: "webhook attempts",
  run: (_sql, now) => attempts.sweep(new Date(now.getTime() - days * 86_400_000)),
});

/** The event log's retention, EVENT_LOG_RETENTION_DAYS (docs/api/events.md §Catch-up: GET /events). */
export const eventLogSweep = (events: WebhookDeps["events"], days: number): Sweep => ({
  name: "event log",
  run: (_sql, now) => events.sweep(new Date(now.getTime() - days * 86_400_000)),
});

/** webhooks: subscriptions, the fan-out of EVENTS, and signed deliveries with retries. */
export function start(config: WebhooksConfig, clock: Clock) {
  return startService({
    name: "webhooks",
    config,
    port: config.WEBHOOKS_PORT,
    clock,
    migrations,
    // deliveries grows from empty in bursts: a plan cached while it was small would keep scanning it
    // whole once it is large (bench/RESULTS-webhooks.md), so statements are planned afresh.
    customPlans: true,
    wire: async (infra) => {
      const auth = rpcClient(AuthService, config.AUTH_URL, 2_000, rpcOptions(config));
      const deps = webhookDeps(infra, config, auth);
      const fanOut = await startFanOut({ ...infra, deliveries: deps.deliveries });
      const sender = await startSender({
        ...infra,
        deliveries: deps.deliveries,
        auth,
        poster: threadPoster({
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
        }),
        secrets: deps.secrets,
        settings: {
          retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS,
          breakerWindowMs: config.WEBHOOK_BREAKER_WINDOW_MS,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
          maxInFlightPerSubscription: config.WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION,
        },
      });
      const erasures = await consumeErasures(infra, "webhooks-erasures", erasureStore(infra.sql).erase);
      return {
        routes: routes(deps),
        consumers: [fanOut, sender.consumer, erasures],
        sweeps: [
          attemptSweep(deps.attempts, config.WEBHOOK_ATTEMPT_RETENTION_DAYS),
          deliverySweep(deps.deliveries, config.WEBHOOK_DELIVERY_RETENTION_DAYS),
          eventLogSweep(deps.events, config.EVENT_LOG_RETENTION_DAYS),
        ],
        async stop() {
          await Promise.all([fanOut.stop(), erasures.stop()]);
          await sender.stop();
        },
      };
    },
  });
}
