import type { Client } from "@connectrpc/connect";
import { consume, type JsMsg, type NatsConnection } from "@funil/bus";
import type { Clock, Logger, Naming } from "@funil/config";
import type { AuthService } from "@funil/contracts";
import { causeOf } from "@funil/rpc";
import { WEBHOOK_EVENTS, type WebhookEvent } from "@funil/schemas";
import { batcher } from "../batch.js";
import type { Poster } from "../delivery.js";
import { InFlight } from "../limits.js";
import { afterAttempt } from "../schedule.js";
import { type SecretBox, signatureHeader } from "../secrets.js";
import type { Claimed, DeliveryStore } from "../store/deliveries.js";

export interface SenderSettings {
  retryScheduleMs: number[];
  breakerWindowMs: number;
  timeoutMs: number;
  maxInFlight: number;
  maxInFlightPerSubscription: number;
}

/** How long a job waits when the key's scopes could not be asked (the gateway is away). */
const AUTH_RETRY_MS = 2_000;

/**
 * The worker of WEBHOOK_DELIVERIES (issue 11 §3-5): one signed POST per
 * job, then the delivery row is written, and only then is the job
 * acknowledged, or handed back with the schedule's delay (`nak`), so a
 * process killed at any point loses nothing. A delivery already delivered
 * is never sent again: its row is claimed before each attempt.
 */
type Key = Awaited<ReturnType<Client<typeof AuthService>["getKey"]>>;

/**
 * The key's current scopes, uncached (API.md §11: an attempt that starts
 * after a revocation always sees it). Attempts that ask about the same key
 * in the same tick share one request, sent after every one of them started:
 * none of them can miss a revocation that came before it.
 */
export function keyChecker(auth: Pick<Client<typeof AuthService>, "getKey">) {
  const gathering = new Map<string, Promise<Key>>();
  return (keyId: string): Promise<Key> => {
    let answer = gathering.get(keyId);
    if (!answer) {
      answer = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        gathering.delete(keyId);
        return auth.getKey({ keyId });
      });
      gathering.set(keyId, answer);
    }
    return answer;
  };
}

export async function startSender(deps: {
  nc: NatsConnection;
  names: Naming;
  deliveries: DeliveryStore;
  auth: Pick<Client<typeof AuthService>, "getKey">;
  poster: Poster;
  secrets: SecretBox;
  clock: Clock;
  log: Logger;
  settings: SenderSettings;
}) {
  const { deliveries, clock, log, settings } = deps;
  const limits = new InFlight(settings.maxInFlight, settings.maxInFlightPerSubscription, settings.timeoutMs);
  // A lease outlives the longest attempt; the job's ack wait outlives the lease, so a job that comes
  // back after a crash finds its delivery free.
  const leaseMs = settings.timeoutMs + 5_000;
  const running = new Set<Promise<void>>();
  const keyOf = keyChecker(deps.auth);
  // The attempts that start in the same turn claim their deliveries in one statement, and the successes
  // that come back in the same turn are recorded in one: two statements per batch, not two per attempt.
  const claim = batcher((ids: string[]) => deliveries.claimAll(ids, clock.now(), leaseMs));
  const recordDelivered = batcher(async (done: Array<{ claimed: Claimed; status: number; at: Date }>) => {
    await deliveries.recordDelivered(done);
    return done.map(() => undefined);
  });

  function signingSecrets(c: Claimed, now: Date): string[] {
    const secrets = [deps.secrets.open(c.secret)];
    if (c.previousSecret && c.previousSecretUntil && c.previousSecretUntil > now)
      secrets.push(deps.secrets.open(c.previousSecret));
    return secrets;
  }

  async function attempt(m: JsMsg, deliveryId: string) {
    const claimed = await claim(deliveryId);
    if ("final" in claimed) {
      if (claimed.final) m.ack();
      else m.nak(claimed.waitMs);
      return;
    }
    if (!claimed.active) {
      await deliveries.abandon(claimed);
      m.ack();
      return;
    }
    // The key's current scopes, asked at every attempt, uncached (API.md §11).
    let key: Key;
    try {
      key = await keyOf(claimed.keyId);
    } catch (err) {
      log.warn(
        { cause: causeOf(err), deliveryId },
        "webhook attempt postponed: the key's scopes could not be checked",
      );
      await deliveries.release(claimed.id);
      m.nak(AUTH_RETRY_MS);
      return;
    }
    const scope = WEBHOOK_EVENTS[claimed.event as WebhookEvent];
    if (!key.active || !key.scopes.includes(scope)) {
      const reason = key.active
        ? `scope_revoked: the subscription's key no longer holds ${scope}`
        : "scope_revoked: the subscription's key was revoked";
      await deliveries.revokeScope(claimed, reason, clock.now());
      m.ack();
      return;
    }
    const sentAt = clock.now();
    const result = await deps.poster.post(claimed.url, claimed.body, {
      "content-type": "application/json",
      "user-agent": "Funil-Webhooks/1",
      "x-funil-event": claimed.event,
      "x-funil-delivery": claimed.id,
      "x-funil-signature": signatureHeader(
        claimed.body,
        Math.floor(sentAt.getTime() / 1000),
        signingSecrets(claimed, sentAt),
      ),
    });
    const now = clock.now();
    if (result.ok) {
      await recordDelivered({ claimed, status: result.status ?? 200, at: now });
      m.ack();
      return;
    }
    const next = await deliveries.record(claimed, result, now, (failingSince) =>
      afterAttempt({
        attempts: claimed.attempts + 1,
        result,
        scheduleMs: settings.retryScheduleMs,
        now,
        failingSince,
        windowMs: settings.breakerWindowMs,
      }),
    );
    if (next.status === "pending") m.nak(next.retryInMs);
    else m.ack();
  }

  const consumer = await consume(
    deps.nc,
    {
      stream: deps.names.stream("WEBHOOK_DELIVERIES"),
      durable: "webhooks-sender",
      filterSubject: deps.names.subject("webhook.deliveries.>"),
      ackWaitMs: leaseMs + 5_000,
      // Every delivery waiting for a retry is an unacknowledged job (nak with a delay).
      maxAckPending: 1_000_000,
    },
    async (m) => {
      const subscriptionId = m.subject.slice(m.subject.lastIndexOf(".") + 1);
      const { deliveryId } = m.json<{ deliveryId: string }>();
      if (!limits.hasRoom(subscriptionId)) {
        m.nak(limits.backoffMs(subscriptionId));
        return;
      }
      const release = await limits.acquire(subscriptionId);
      const work = attempt(m, deliveryId)
        .catch((err) => {
          log.warn({ err, deliveryId }, "webhook attempt failed; the job comes back");
          m.nak(1_000);
        })
        .finally(() => {
          release();
          running.delete(work);
        });
      running.add(work);
    },
    (err) => log.warn({ err }, "webhook deliveries consumer failed; restarting"),
  );

  return {
    consumer,
    /** Stops taking jobs, then lets the attempts in flight finish. */
    async stop() {
      await consumer.stop();
      await Promise.allSettled([...running]);
      await deps.poster.close();
    },
  };
}
