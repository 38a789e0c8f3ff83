import { type KeyObject, randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { consume, type JsMsg, type NatsConnection, withMessageContext } from "@funil/bus";
import type { Clock, Logger, Naming } from "@funil/config";
import type { AuthService } from "@funil/contracts";
import { causeOf } from "@funil/rpc";
import { WEBHOOK_EVENTS, type WebhookEvent } from "@funil/schemas";
import { batcher } from "../batch.js";
import type { Poster } from "../delivery.js";
import { InFlight, JobQueues } from "../limits.js";
import { type AttemptResult, afterAttempt } from "../schedule.js";
import { type SecretBox, signatureHeader, signingKeys } from "../secrets.js";
import type { AttemptLog, DeliveryStore, DueDelivery, Outcome } from "../store/deliveries.js";
import { tracedAttempt } from "./tracing.js";

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
 * How long an attempt waits for company before its read, key check and
 * record go out (and a job before its lease is taken): a few milliseconds of
 * a delivery's latency buy statements and key checks shared by many more
 * attempts (at 5 000 deliveries a second, one per event-loop turn meant one
 * every 20 or so).
 */
const GATHER_MS = 2;

/**
 * How long attempts wait for company before their key is checked (one
 * request per key per window, keyChecker): at 6 000 deliveries a second of
 * one key, 10 ms instead of 2 made the gateway's Auth answer 100 requests a
 * second instead of 500, and cost it 6 µs per delivery instead of 11
 * (bench:webhooks, 2 runs each).
 */
const KEY_GATHER_MS = 10;

/**
 * How long a success waits for company before it is written (one statement
 * for all that come within it). Its lane waits too, while other lanes of the
 * subscription keep its slots busy: at 5 ms instead of 2, the webhooks
 * process spent 88-97 µs per delivery instead of 111-147, PostgreSQL 33-37
 * instead of 35-49 (bench:webhooks, 3 runs each, one after the other). The
 * other windows stay at 2 ms: at 5 the fast receivers kept only 63 % of
 * their rate in one run with 5 hanging.
 */
const RECORD_GATHER_MS = 5;

/**
 * Lanes of a job per slot of its subscription. A lane holds its slot only
 * for the POST: with one lane per slot, a slot stood empty while its lane
 * recorded the attempt and checked the next. With two, a lane waiting for the
 * slot takes it at once: at 256 in flight, 16 per subscription, the ratio to
 * the raw loop went from 0.51 to 0.54 and the fast receivers kept 88-96 % of
 * their rate instead of 81-87 % (bench:webhooks, 2 runs each). The bound on
 * POSTs in flight per subscription is the slots', not the lanes'.
 */
const LANES_PER_SLOT = 2;

/** How long an attempt may wait for its slot before it checks its delivery and key again. */
const RECHECK_MS = 100;

type Key = Awaited<ReturnType<Client<typeof AuthService>["getKey"]>>;

/**
 * The key's current scopes, uncached (docs/api/webhooks.md §Scope revoked: an attempt that starts
 * after a revocation always sees it). Attempts that ask about the same key
 * within `windowMs` of each other share one request, sent after every one of
 * them started: none of them can miss a revocation that came before it.
 */
export function keyChecker(auth: Pick<Client<typeof AuthService>, "getKey">, windowMs = KEY_GATHER_MS) {
  const gathering = new Map<string, Promise<Key>>();
  return (keyId: string): Promise<Key> => {
    let answer = gathering.get(keyId);
    if (!answer) {
      answer = new Promise<void>((resolve) => setTimeout(resolve, windowMs)).then(() => {
        gathering.delete(keyId);
        return auth.getKey({ keyId });
      });
      gathering.set(keyId, answer);
    }
    return answer;
  };
}

/**
 * Jobs of one subscription worked on at once (each brings up to JOB_SIZE
 * deliveries to its slots), jobs of one subscription queued in the process
 * behind them, and jobs held over all subscriptions.
 */
const JOBS_RUNNING_PER_SUBSCRIPTION = 2;
const JOBS_WAITING_PER_SUBSCRIPTION = 64;
const JOBS_HELD = 4_096;

/**
 * A job of WEBHOOK_DELIVERIES: deliveries of one subscription. The fan-out
 * queues one job per subscription for the deliveries of the events it fans
 * out together, so a burst costs a JetStream message per subscription, not
 * per delivery. (`deliveryId`: a job of one, as queued before.)
 */
interface Job {
  job?: string;
  deliveryIds?: string[];
  deliveryId?: string;
}

/** A job as this process holds it: its id (its lease's key) and its deliveries, with its message. */
interface HeldJob {
  id: string;
  deliveryIds: string[];
}
type QueuedJob = { m: JsMsg; job: HeldJob };

/**
 * A job's id (its lease's key) and delivery ids, or undefined when the
 * message is not a job. A job of one delivery queued before jobs had ids is
 * known by its delivery's id.
 */
function jobOf(m: JsMsg): HeldJob | undefined {
  try {
    const job = m.json<Job>();
    const ids = job.deliveryIds ?? (job.deliveryId === undefined ? undefined : [job.deliveryId]);
    if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === "string"))
      return undefined;
    const id = typeof job.job === "string" ? job.job : ids[0]!;
    return { id, deliveryIds: ids };
  } catch {
    return undefined;
  }
}

const FINAL: Outcome = { final: true };

interface SenderDeps {
  nc: NatsConnection;
  names: Naming;
  deliveries: DeliveryStore;
  auth: Pick<Client<typeof AuthService>, "getKey">;
  poster: Poster;
  secrets: SecretBox;
  clock: Clock;
  log: Logger;
  settings: SenderSettings;
}

/** What the parts of a sender share: its collaborators, its limits, and the jobs it holds. */
interface Sender {
  deps: SenderDeps;
  limits: InFlight;
  jobs: JobQueues<QueuedJob>;
  /** How long a job's lease lasts, and a job's ack wait (it outlives the lease). */
  leaseMs: number;
  ackWaitMs: number;
  /** This process, as the holder of its leases. */
  holder: string;
  /** The jobs held by this process, by id; each holds its lease until released. */
  working: Map<string, JsMsg>;
  running: Set<Promise<void>>;
  /**
   * Once stopping, a running job starts no more attempts: the ones under way finish and are recorded,
   * the rest of the job goes back to JetStream at once, for another copy.
   */
  stopping: boolean;
}

/**
 * The statements of a sender, each gathering the calls that come within
 * its window into one: jobs taken within GATHER_MS lease (and release) in
 * one statement; attempts that start within it read their deliveries in
 * one, and the successes that come back within RECORD_GATHER_MS are
 * recorded in one.
 */
function gatherers(s: Sender) {
  const { deliveries, clock } = s.deps;
  const lease = batcher(
    (jobs: string[]) => {
      const now = clock.now();
      return deliveries.leaseJobs(jobs, s.holder, now, new Date(now.getTime() + s.leaseMs));
    },
    256,
    GATHER_MS,
  );
  const release = batcher(
    async (jobs: string[]) => {
      await deliveries.releaseJobs(jobs, s.holder);
      return jobs.map(() => undefined);
    },
    256,
    GATHER_MS,
  );
  const readDue = batcher((ids: string[]) => deliveries.readDue(ids, clock.now(), s.leaseMs), 256, GATHER_MS);
  // A job's deliveries, read together as it starts (jobs that start within GATHER_MS in one statement).
  const readJob = batcher(
    async (jobs: string[][]) => {
      const answers = await deliveries.readDue(jobs.flat(), clock.now(), s.leaseMs);
      let from = 0;
      return jobs.map((ids) => {
        const mine = answers.slice(from, from + ids.length);
        from += ids.length;
        return mine;
      });
    },
    64,
    GATHER_MS,
  );
  const recordDelivered = batcher(
    async (done: Array<{ delivery: DueDelivery; status: number; at: Date; attempt: AttemptLog }>) => {
      await deliveries.recordDelivered(done);
      return done.map(() => undefined);
    },
    256,
    RECORD_GATHER_MS,
  );
  return { lease, release, readDue, readJob, recordDelivered };
}
type Gatherers = ReturnType<typeof gatherers>;

/**
 * Every ackWaitMs / 4, JetStream is told that the held jobs (running or
 * waiting here) are still worked on, and the running ones' leases are held on.
 */
function holdJobsOn(s: Sender): NodeJS.Timeout {
  const { deliveries, clock, log } = s.deps;
  const heartbeat = setInterval(() => {
    for (const m of s.working.values()) m.working();
    for (const queued of s.jobs.waiting()) queued.m.working();
    deliveries
      .extendJobs([...s.working.keys()], s.holder, new Date(clock.now().getTime() + s.leaseMs))
      .catch((err) => log.warn({ err }, "webhook job leases could not be held on"));
  }, s.ackWaitMs / 4);
  heartbeat.unref();
  return heartbeat;
}

/**
 * What an attempt checks before its POST: the delivery is still pending
 * and due, its subscription active, and the subscription's key still holds
 * the event's read scope, asked now, uncached (docs/api/webhooks.md §Scope revoked). Answers the
 * delivery to send, or what became of it. A delivery that a resend or a
 * recover gave to another job is that job's: this one drops it. `read`: the
 * delivery as its job read it, when that was at most RECHECK_MS ago; else
 * it is read now.
 */
function readiness(s: Sender, readDue: Gatherers["readDue"]) {
  const { deliveries, clock, log } = s.deps;
  const keyOf = keyChecker(s.deps.auth);
  return async function ready(
    jobId: string,
    deliveryId: string,
    read?: DueDelivery | Outcome,
  ): Promise<DueDelivery | Outcome> {
    const delivery = read ?? (await readDue(deliveryId));
    if ("final" in delivery) return delivery;
    if (delivery.queuedJob !== null && delivery.queuedJob !== jobId) return FINAL;
    if (!delivery.active) {
      await deliveries.abandon(delivery);
      return FINAL;
    }
    let key: Key;
    try {
      key = await keyOf(delivery.keyId);
    } catch (err) {
      log.warn(
        { cause: causeOf(err), deliveryId },
        "webhook attempt postponed: the key's scopes could not be checked",
      );
      return { final: false, waitMs: AUTH_RETRY_MS };
    }
    const scope = WEBHOOK_EVENTS[delivery.event as WebhookEvent];
    if (!key.active || !key.scopes.includes(scope)) {
      const reason = key.active
        ? `scope_revoked: the subscription's key no longer holds ${scope}`
        : "scope_revoked: the subscription's key was revoked";
      await deliveries.revokeScope(delivery, reason, clock.now());
      return FINAL;
    }
    return delivery;
  };
}

/** The signed POST of a delivery (docs/api/webhooks.md §Signature): its body as fanned out, a signature made now. */
function signedPoster(deps: SenderDeps) {
  const keyOfSecret = signingKeys(deps.secrets);
  function signingSecrets(c: DueDelivery, now: Date): KeyObject[] {
    const secrets = [keyOfSecret(c.secret)];
    if (c.previousSecret && c.previousSecretUntil && c.previousSecretUntil > now)
      secrets.push(keyOfSecret(c.previousSecret));
    return secrets;
  }
  return (delivery: DueDelivery, sentAt: Date): Promise<AttemptResult> => {
    return deps.poster.post(delivery.url, delivery.body, {
      "content-type": "application/json",
      "user-agent": "Funil-Webhooks/1",
      "x-funil-event": delivery.event,
      "x-funil-delivery": delivery.id,
      "x-funil-signature": signatureHeader(
        delivery.body,
        Math.floor(sentAt.getTime() / 1000),
        signingSecrets(delivery, sentAt),
      ),
    });
  };
}

/**
 * One attempt: checked (ready), then POSTed in a slot of its subscription,
 * then recorded. The slot is held for the POST only, so the reads, key
 * checks and records of a fast receiver's attempts do not take slots. The
 * delivery a POST sends was read at most RECHECK_MS before it: one read
 * longer ago (its key check was slow, or its receiver kept the slot busy)
 * is checked again in the slot, so nothing that changed meanwhile is missed,
 * an erasure's redacted body included (docs/api/contacts.md §POST
 * /contacts/{id}/erase). `read`, `readAt`: the delivery as its job read it,
 * and when (performance.now()).
 */
function attempter(s: Sender, g: Gatherers) {
  const ready = readiness(s, g.readDue);
  const post = signedPoster(s.deps);
  const record = outcomeRecorder(s, g);
  return async function attempt(
    subscriptionId: string,
    jobId: string,
    deliveryId: string,
    read: DueDelivery | Outcome,
    readAt: number,
  ): Promise<Outcome> {
    const recent = performance.now() - readAt <= RECHECK_MS;
    // When the delivery was read: by its job, or by ready() now (a time taken before the read: never later).
    const readSince = recent ? readAt : performance.now();
    let delivery = await ready(jobId, deliveryId, recent ? read : undefined);
    if ("final" in delivery) return delivery;
    const release = await s.limits.acquire(subscriptionId);
    let result: AttemptResult;
    const log: AttemptLog = { at: new Date(0), durationMs: 0 };
    try {
      if (performance.now() - readSince > RECHECK_MS) {
        delivery = await ready(jobId, deliveryId);
        if ("final" in delivery) return delivery;
      }
      log.at = s.deps.clock.now();
      const started = performance.now();
      const sending = delivery;
      result = await tracedAttempt(sending, () => post(sending, log.at));
      log.durationMs = Math.round(performance.now() - started);
      log.body = result.body;
    } finally {
      release();
    }
    return record(delivery, result, log);
  };
}

/**
 * An attempt's outcome written to its delivery, with its line of the
 * attempt log: delivered, due again (how soon), or dead.
 */
function outcomeRecorder(s: Sender, g: Gatherers) {
  const { deliveries, clock, settings } = s.deps;
  return async (delivery: DueDelivery, result: AttemptResult, log: AttemptLog): Promise<Outcome> => {
    const now = clock.now();
    if (result.ok) {
      await g.recordDelivered({ delivery, status: result.status ?? 200, at: now, attempt: log });
      return FINAL;
    }
    const next = await deliveries.record(
      delivery,
      result,
      now,
      (failingSince) =>
        afterAttempt({
          // The schedule of the current series: a resend or a recover starts one afresh.
          attempts: delivery.attempts + 1 - delivery.retryFrom,
          result,
          scheduleMs: settings.retryScheduleMs,
          now,
          failingSince,
          windowMs: settings.breakerWindowMs,
        }),
      log,
    );
    return next.status === "pending" ? { final: false, waitMs: next.retryInMs } : FINAL;
  };
}

/**
 * A job taken: its lease, then its deliveries read together as it starts
 * (one statement for many jobs, where one per attempt made three times as
 * many). Undefined when it cannot be worked on now: it is handed back.
 */
function jobTaker(s: Sender, g: Gatherers) {
  const { log } = s.deps;
  return async (m: JsMsg, job: HeldJob): Promise<Array<DueDelivery | Outcome> | undefined> => {
    let granted: boolean;
    try {
      granted = await g.lease(job.id);
    } catch (err) {
      log.warn({ err, job: job.id }, "webhook job postponed: its lease could not be taken");
      m.nak(1_000);
      return undefined;
    }
    if (!granted) {
      // Another sender holds it (a copy of this job came back while the first is still worked on).
      m.nak(s.leaseMs);
      return undefined;
    }
    s.working.set(job.id, m);
    try {
      return await g.readJob(job.deliveryIds);
    } catch (err) {
      log.warn({ err, job: job.id }, "webhook job postponed: its deliveries could not be read");
      s.working.delete(job.id);
      await g.release(job.id).catch(() => undefined);
      m.nak(1_000);
      return undefined;
    }
  };
}

/**
 * Every delivery of the job, each in a slot of its subscription; then ack,
 * or nak until the earliest retry. A few lanes per job take its deliveries
 * one after another, so a delivery waiting for a slot costs nothing but its
 * row.
 */
function jobRunner(s: Sender, g: Gatherers) {
  const { log, settings } = s.deps;
  const take = jobTaker(s, g);
  const attempt = attempter(s, g);
  return async function runJob(m: JsMsg, subscriptionId: string, job: HeldJob) {
    const ids = job.deliveryIds;
    const reads = await take(m, job);
    if (!reads) return;
    const readAt = performance.now();
    let next = 0;
    let waitMs = Number.POSITIVE_INFINITY;
    const lane = async () => {
      while (next < ids.length && !s.stopping) {
        const at = next++;
        const id = ids[at]!;
        const outcome = await attempt(subscriptionId, job.id, id, reads[at]!, readAt).catch(
          (err): Outcome => {
            log.warn({ err, deliveryId: id }, "webhook attempt failed; its job comes back");
            return { final: false, waitMs: 1_000 };
          },
        );
        if (!outcome.final) waitMs = Math.min(waitMs, outcome.waitMs);
      }
    };
    try {
      const lanes = Math.min(ids.length, settings.maxInFlightPerSubscription * LANES_PER_SLOT);
      await Promise.all(Array.from({ length: lanes }, lane));
      if (next < ids.length) waitMs = 0;
    } finally {
      s.working.delete(job.id);
      // Released before the job is handed back, so that it finds its lease free when it returns; if the
      // release fails the lease runs out by itself.
      await g
        .release(job.id)
        .catch((err) => log.warn({ err, job: job.id }, "webhook job lease not released"));
    }
    if (waitMs === Number.POSITIVE_INFINITY) m.ack();
    else m.nak(waitMs);
  };
}

/**
 * What the consumer does with each message: a job is run at once when its
 * subscription has room, queued here behind the running ones, or handed
 * back when too many wait; when a job is over, the next one of its
 * subscription waiting here starts.
 */
function jobHandler(s: Sender, g: Gatherers) {
  const runJob = jobRunner(s, g);
  const { log } = s.deps;
  function start(subscriptionId: string, entry: QueuedJob) {
    // In the job's own trace, also when it starts after another job of its subscription.
    const work = withMessageContext(entry.m, () => runJob(entry.m, subscriptionId, entry.job)).finally(() => {
      s.running.delete(work);
      const next = s.jobs.done(subscriptionId);
      if (next && s.stopping) next.m.nak();
      else if (next) start(subscriptionId, next);
    });
    s.running.add(work);
  }
  return async (m: JsMsg) => {
    const subscriptionId = m.subject.slice(m.subject.lastIndexOf(".") + 1);
    const job = jobOf(m);
    if (!job) {
      log.warn({ subject: m.subject }, "webhook job dropped: not a job of deliveries");
      m.term();
      return;
    }
    // Taking no more jobs while many are held keeps what a process holds bounded.
    await s.jobs.room();
    const entry = { m, job };
    const verdict = s.jobs.offer(subscriptionId, entry);
    if (verdict === "full") m.nak(s.limits.backoffMs(subscriptionId));
    else if (verdict === "run") start(subscriptionId, entry);
  };
}

/**
 * The worker of WEBHOOK_DELIVERIES (docs/api/webhooks.md §Retries): one signed POST per
 * delivery of a job, each in a slot of its subscription; every outcome is
 * written to its delivery's row before the job is acknowledged, or handed
 * back with the delay of its earliest retry (`nak`, the schedule of
 * schedule.ts), so a process killed at any point loses nothing. A job is
 * worked on by one sender at a time, the holder of its lease (job_leases),
 * and each delivery's row is read when its job starts, and again at its
 * attempt if that was more than RECHECK_MS before: one delivered, or dead,
 * is never sent again. While a job's deliveries wait for slots, its
 * lease is held on and JetStream is told it is still being worked on.
 */
export async function startSender(deps: SenderDeps) {
  const { settings } = deps;
  // A job's lease is held on every ackWaitMs / 4 while it is worked on; the job's ack wait outlives the
  // lease, so a job that comes back after a crash finds its lease run out.
  const leaseMs = settings.timeoutMs + 5_000;
  const s: Sender = {
    deps,
    limits: new InFlight(settings.maxInFlight, settings.maxInFlightPerSubscription, settings.timeoutMs),
    jobs: new JobQueues<QueuedJob>(JOBS_RUNNING_PER_SUBSCRIPTION, JOBS_WAITING_PER_SUBSCRIPTION, JOBS_HELD),
    leaseMs,
    ackWaitMs: leaseMs + 5_000,
    holder: randomUUID(),
    working: new Map(),
    running: new Set(),
    stopping: false,
  };
  const heartbeat = holdJobsOn(s);
  const consumer = await consume(
    deps.nc,
    {
      stream: deps.names.stream("WEBHOOK_DELIVERIES"),
      durable: "webhooks-sender",
      filterSubject: deps.names.subject("webhook.deliveries.>"),
      ackWaitMs: s.ackWaitMs,
      // Every job waiting for a retry is unacknowledged (nak with a delay).
      maxAckPending: 1_000_000,
    },
    jobHandler(s, gatherers(s)),
    (err) => deps.log.warn({ err }, "webhook deliveries consumer failed; restarting"),
  );

  return {
    consumer,
    /**
     * Stops taking jobs, hands back those waiting here, lets the attempts under way finish and be
     * recorded, and hands back what the running jobs had not attempted yet.
     */
    async stop() {
      s.stopping = true;
      await consumer.stop();
      for (const waiting of s.jobs.takeWaiting()) waiting.m.nak();
      await Promise.allSettled([...s.running]);
      clearInterval(heartbeat);
      await deps.poster.close();
    },
  };
}
