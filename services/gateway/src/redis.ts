import type { Logger } from "@funil/config";
import { Redis } from "ioredis";

/**
 * The gateway's Redis, set to fail fast: no request ever waits for it (the
 * rate limit and the key cache have local fallbacks), so a command while it is
 * away fails at once instead of queueing, and one slow to answer fails after
 * 200 ms. Reconnects every 100–500 ms. An outage is two log lines: one when
 * it goes, one when it is back.
 */
export function openRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 200,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(100 * attempt, 500),
  });
  let downSince: number | undefined;
  const down = (cause: string) => {
    if (downSince !== undefined) return;
    downSince = Date.now();
    log.warn({ cause }, "Redis unavailable: rate limit and key cache run locally; reconnecting");
  };
  redis.on("error", (err: Error) => down(err.message));
  redis.on("close", () => down("connection closed"));
  redis.on("ready", () => {
    if (downSince === undefined) return;
    log.info({ downMs: Date.now() - downSince }, "Redis back");
    downSince = undefined;
  });
  return redis;
}
