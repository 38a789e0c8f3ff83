import type { Redis } from "ioredis";
import { hashKey, KEY_PATTERN, sameHash } from "./keys.js";
import type { KeyRecord, KeyStore } from "./store/keys.js";

export interface Caller {
  keyId: string;
  workspaceId: string;
  scopes: ReadonlySet<string>;
  operator: boolean;
}

/**
 * While the invalidation channel is down (Redis away) a copy cannot hear of a
 * revocation made through another copy, so a cached key is trusted this long
 * at most after it was resolved.
 */
export const OFFLINE_KEY_TTL_MS = 1000;

/**
 * Resolves bearer keys to callers. Hits are cached for `ttlMs`; a revocation
 * or scope change is announced on a Redis channel so every gateway copy drops
 * the entry at once, and the short TTL bounds the damage of a lost message.
 * While the channel is down the lifetime drops to OFFLINE_KEY_TTL_MS, and
 * when it is back the whole cache goes (announcements may have been missed).
 */
export function keyResolver(opts: {
  store: KeyStore;
  ttlMs: number;
  redis: Redis;
  channel: string;
  now?: () => number;
}) {
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { caller: Caller; hash: string; expires: number; resolvedAt: number }>();
  // The subscriber queues its SUBSCRIBE until connected (and ioredis renews it after a reconnect).
  const subscriber = opts.redis.duplicate({ enableOfflineQueue: true });
  subscriber.on("error", () => {});
  let listening = false;
  const ready = subscriber.subscribe(opts.channel).then(
    () => {
      listening = true;
    },
    () => {},
  );
  subscriber.on("close", () => {
    listening = false;
  });
  subscriber.on("ready", () => {
    if (!listening) cache.clear();
    listening = true;
  });
  // Messages name a key (`key:<id>`) or a whole workspace (`workspace:<id>`, its operator flag changed).
  subscriber.on("message", (_channel, message: string) => drop(message));

  function drop(target: string) {
    const [kind, id] = target.split(":", 2) as ["key" | "workspace", string];
    for (const [hash, entry] of cache) {
      if ((kind === "key" ? entry.caller.keyId : entry.caller.workspaceId) === id) cache.delete(hash);
    }
  }
  async function announce(target: string) {
    drop(target);
    await opts.redis.publish(opts.channel, target).catch(() => {});
  }

  const toCaller = (k: KeyRecord): Caller => ({
    keyId: k.id,
    workspaceId: k.workspaceId,
    scopes: new Set(k.scopes),
    operator: k.operator,
  });

  return {
    ready,
    async resolve(key: string): Promise<Caller | undefined> {
      if (!KEY_PATTERN.test(key)) return undefined;
      const hash = hashKey(key);
      const hit = cache.get(hash);
      const fresh =
        hit && (listening ? hit.expires : Math.min(hit.expires, hit.resolvedAt + OFFLINE_KEY_TTL_MS)) > now();
      if (hit && fresh && sameHash(hit.hash, hash)) return hit.caller;
      const record = await opts.store.findActiveByHash(hash);
      // The lookup is by hash; the explicit constant-time check keeps it honest if that ever changes.
      if (!record || !sameHash(record.hash, hash)) {
        cache.delete(hash);
        return undefined;
      }
      const caller = toCaller(record);
      if (opts.ttlMs > 0) cache.set(hash, { caller, hash, expires: now() + opts.ttlMs, resolvedAt: now() });
      return caller;
    },
    /** Drops the key here and tells every other gateway copy to do the same. */
    invalidate: (keyId: string) => announce(`key:${keyId}`),
    /** The same for every key of a workspace. */
    invalidateWorkspace: (workspaceId: string) => announce(`workspace:${workspaceId}`),
    async close() {
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
export type KeyResolver = ReturnType<typeof keyResolver>;
