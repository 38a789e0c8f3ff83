import { randomBytes } from "node:crypto";
import type { Logger } from "@funil/config";
import type { DependencyStatus } from "@funil/rpc";
import type { Redis } from "ioredis";
import type { LocalDay } from "../local-time.js";

/**
 * Redis in front of PostgreSQL (DESIGN.md: scheduling): a short lock per
 * assignee and start time, and a counter per calendar day, turn contention
 * away before it reaches the database. They only ever say "no" early: the
 * exclusion constraint and the day_counts check decide every booking, so a
 * lost lock, a stale counter or Redis being down can never double-book or
 * pass a cap. When Redis fails, bookings go on under PostgreSQL's guards alone
 * (logged once, and /readyz and /metrics show scheduling's redis dependency
 * down: funil_dependency_up{service="scheduling",dependency="redis"} 0);
 * counters that are missing (a
 * restart, an outage, their expiry) are rebuilt from PostgreSQL.
 */

export type Release = () => Promise<void>;
const noop: Release = async () => {};

/** How long a claimed time stays locked if its holder dies without releasing it. */
const LOCK_MS = 5_000;
/** Counters are rebuilt from PostgreSQL at least this often, so any drift heals. */
const COUNTER_MS = 60_000;

// The holder's token must match: a lock that expired and was taken by another is not deleted.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
// -1: no counter (rebuild it); 0: the day is at its cap; else the count with this reservation.
const RESERVE = `local n = redis.call('GET', KEYS[1])
if not n then return -1 end
if tonumber(n) >= tonumber(ARGV[1]) then return 0 end
return redis.call('INCR', KEYS[1])`;
const UNRESERVE = `if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0`;

export function bookingGuard(opts: { redis: Redis; prefix: string; log: Logger }) {
  const { redis, prefix, log } = opts;
  let healthy = true;

  /** Runs a Redis command; on failure notes the outage once and answers `fallback`. */
  async function attempt<T>(what: string, fallback: T, fn: () => Promise<T>): Promise<T> {
    try {
      const value = await fn();
      if (!healthy) {
        healthy = true;
        log.info("redis answers again: the booking guard is back in front of PostgreSQL");
      }
      return value;
    } catch (err) {
      if (healthy) {
        healthy = false;
        log.warn(
          { err: (err as Error).message, what },
          "redis unavailable: bookings go on under PostgreSQL's guards alone",
        );
      }
      return fallback;
    }
  }

  const timeKey = (workspaceId: string, assigneeUserId: string, startAt: Date) =>
    `${prefix}time:${workspaceId}:${assigneeUserId}:${startAt.getTime()}`;
  const dayKey = (calendarId: string, day: LocalDay) => `${prefix}day:${calendarId}:${day}`;

  return {
    /** Claims an assignee's start time for one attempt; "taken" while another attempt holds it. */
    async claimTime(workspaceId: string, assigneeUserId: string, startAt: Date): Promise<Release | "taken"> {
      const key = timeKey(workspaceId, assigneeUserId, startAt);
      const token = randomBytes(12).toString("base64url");
      const claimed = await attempt("claim", "skipped" as const, async () =>
        (await redis.set(key, token, "PX", LOCK_MS, "NX")) === "OK"
          ? ("claimed" as const)
          : ("taken" as const),
      );
      if (claimed === "taken") return "taken";
      if (claimed === "skipped") return noop;
      return async () => {
        await attempt("release", 0, () => redis.eval(RELEASE, 1, key, token) as Promise<number>);
      };
    },

    /**
     * Reserves a place on a calendar's day; "full" when the counter is at the
     * cap. A missing counter is rebuilt from `count` (PostgreSQL) first. The
     * release gives the place back when the booking did not happen.
     */
    async reservePlace(
      calendarId: string,
      day: LocalDay,
      cap: number,
      count: () => Promise<number>,
    ): Promise<Release | "full"> {
      const key = dayKey(calendarId, day);
      let result = await attempt(
        "reserve",
        undefined,
        () => redis.eval(RESERVE, 1, key, cap) as Promise<number>,
      );
      if (result === -1) {
        const seed = await count();
        await attempt("rebuild", undefined, () => redis.set(key, seed, "PX", COUNTER_MS, "NX"));
        result = await attempt(
          "reserve",
          undefined,
          () => redis.eval(RESERVE, 1, key, cap) as Promise<number>,
        );
      }
      if (result === 0) return "full";
      if (result === undefined || result === -1) return noop;
      return async () => {
        await attempt("unreserve", 0, () => redis.eval(UNRESERVE, 1, key) as Promise<number>);
      };
    },

    /** After a change PostgreSQL made to days' counts (cancel, move, keyed booking): rebuilt on next use. */
    async forgetDays(calendarId: string, days: LocalDay[]): Promise<void> {
      await attempt("forget", 0, () => redis.del(...days.map((d) => dayKey(calendarId, d))));
    },

    /** The redis dependency for the HealthService: not required, bookings go on without it. */
    async check(): Promise<DependencyStatus> {
      const ok = await attempt("ping", false, async () => (await redis.ping()) === "PONG");
      return {
        name: "redis",
        required: false,
        ok,
        detail: ok ? "" : "unreachable: bookings rely on PostgreSQL's guards alone",
      };
    },
  };
}
export type BookingGuard = ReturnType<typeof bookingGuard>;
