import type { Redis } from "ioredis";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window ends (and the budget is whole again). */
  resetMs: number;
}

/**
 * Per-key rate limit over fixed windows, shared by every gateway copy without
 * a Redis round trip on a request's path. Each copy counts locally and, every
 * `syncMs`, adds what it admitted to the key's counter in Redis (INCRBY) and
 * learns the total of all copies. A request is admitted while the last known
 * total plus this copy's unsent count is under `max`.
 *
 * Bound: a copy never holds more than `burst` unsent admissions (at that point
 * it waits for a sync, the one case where a request waits on Redis), so all
 * copies together admit at most max + (copies − 1) × burst per window, with
 * burst = max(1, ⌊max / 20⌋): 1200 + 60 per extra copy at the defaults, and
 * exactly max when max < 40.
 *
 * While Redis is away each copy enforces the limit on its own, from what it
 * knew of the total plus what it admitted since (at most max per copy): no
 * request waits on Redis, and the shared count resumes by itself when Redis is
 * back (the admissions of the outage are added then).
 */
export function rateLimiter(opts: {
  redis: Redis;
  prefix: string;
  max: number;
  windowMs: number;
  syncMs?: number;
  now?: () => number;
}) {
  const { redis, max, windowMs } = opts;
  const now = opts.now ?? Date.now;
  const burst = Math.max(1, Math.floor(max / 20));
  const buckets = new Map<string, { window: number; used: number; synced: number; total: number }>();
  const online = () => redis.status === "ready";

  function bucketOf(key: string) {
    const window = Math.floor(now() / windowMs);
    let b = buckets.get(key);
    if (!b || b.window !== window) {
      b = { window, used: 0, synced: 0, total: 0 };
      buckets.set(key, b);
    }
    return b;
  }

  let syncing: Promise<boolean> | undefined;
  /** Sends every copy-local count to Redis; resolves false when Redis did not answer. */
  function sync(): Promise<boolean> {
    syncing ??= (async () => {
      const window = Math.floor(now() / windowMs);
      for (const [key, b] of buckets) if (b.window < window) buckets.delete(key);
      const due = [...buckets].filter(([, b]) => b.used > b.synced);
      if (due.length === 0 || !online()) return online();
      const pipeline = redis.pipeline();
      const sent = due.map(([key, b]) => {
        const redisKey = `${opts.prefix}${key}:${b.window}`;
        pipeline.incrby(redisKey, b.used - b.synced).pexpire(redisKey, windowMs * 2);
        return { b, used: b.used };
      });
      const results = (await pipeline.exec()) ?? [];
      sent.forEach(({ b, used }, i) => {
        const [err, total] = results[i * 2] ?? [new Error("no reply")];
        if (err) return;
        b.synced = used;
        b.total = Number(total);
      });
      return true;
    })()
      .catch(() => false)
      .finally(() => {
        syncing = undefined;
      });
    return syncing;
  }
  const timer = setInterval(sync, opts.syncMs ?? 100);
  timer.unref();

  return {
    async take(key: string): Promise<RateDecision> {
      let b = bucketOf(key);
      while (b.used - b.synced >= burst && online()) {
        if (!(await sync())) break;
        b = bucketOf(key);
      }
      const known = b.total + (b.used - b.synced);
      const resetMs = (b.window + 1) * windowMs - now();
      if (known >= max) return { allowed: false, limit: max, remaining: 0, resetMs };
      b.used++;
      return { allowed: true, limit: max, remaining: max - known - 1, resetMs };
    },
    close: () => clearInterval(timer),
  };
}
export type RateLimiter = ReturnType<typeof rateLimiter>;
