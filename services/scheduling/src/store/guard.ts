import { randomBytes } from "node:crypto";
import { CallInTransactionError } from "@funil/db";
import type { DependencyStatus } from "@funil/rpc";
import type { Redis } from "ioredis";
import type { LocalDay } from "../local-time.js";

/**
 * Redis in front of PostgreSQL (docs/architecture.md §Services and what each owns: scheduling): a short lock per
 * assignee and start time, and a counter per calendar day, turn contention
 * away before it reaches the database. They only ever say "no" early: the
 * exclusion constraint and the day_counts check decide every booking, so a
 * lost lock, a stale counter or Redis being down can never double-book or
 * pass a cap. When Redis fails, bookings go on under PostgreSQL's guards alone
 * (logged once by the client, @funil/db/redis, and /readyz and /metrics show
 * scheduling's redis dependency down:
 * funil_dependency_up{service="scheduling",dependency="redis"} 0); counters
 * that are missing (a restart, an outage, their expiry) are rebuilt from
 * PostgreSQL.
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
// A booking's claim and reservation in one round trip (KEYS: time lock, day counter; ARGV: token, lock ms,
// cap). -2: the time is taken; otherwise the time is claimed and the answer is RESERVE's.
const HOLD = `if not redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return -2 end
local n = redis.call('GET', KEYS[2])
if not n then return -1 end
if tonumber(n) >= tonumber(ARGV[3]) then return 0 end
return redis.call('INCR', KEYS[2])`;
// The end of a hold in one round trip (KEYS: time lock, day counter; ARGV: token, "1" to give the place back).
const UNHOLD = `if ARGV[2] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DECR', KEYS[2]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`;

/** A booking's claim on its time and, unless the day looked full, a place on its day. */
export interface Hold {
  /** Redis counted a place for this booking: give it back if the booking does not happen. */
  reserved: boolean;
  /** Redis's counter says the day is at its cap (PostgreSQL has the last word). */
  full: boolean;
  release(booked: boolean): Promise<void>;
}

/**
 * Runs a Redis command; on failure answers `fallback` (the client logs the outage once). A command
 * refused because a transaction is open is a bug, not an outage: it is thrown.
 */
async function attempt<T>(fallback: T, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CallInTransactionError) throw err;
    return fallback;
  }
}

const newToken = () => randomBytes(12).toString("base64url");

/** Claims `key` for one attempt (an assignee's start time, a request's key); "taken" while another holds it. */
async function claim(redis: Redis, key: string): Promise<Release | "taken"> {
  const token = newToken();
  const claimed = await attempt("skipped" as const, async () =>
    (await redis.set(key, token, "PX", LOCK_MS, "NX")) === "OK" ? ("claimed" as const) : ("taken" as const),
  );
  if (claimed === "taken") return "taken";
  if (claimed === "skipped") return noop;
  return async () => {
    await attempt(0, () => redis.eval(RELEASE, 1, key, token) as Promise<number>);
  };
}

/**
 * A booking's hold: its assignee's start time claimed (`time`; "taken" while
 * another attempt holds it) and a place reserved on its calendar's day
 * (`place`), in one round trip, released in one (both keys live in one
 * Redis). A missing counter is rebuilt from `count` (PostgreSQL) first; Redis
 * down means no hold at all (PostgreSQL decides alone).
 */
async function holdIn(
  redis: Redis,
  keys: { time: string; place: string },
  cap: number,
  count: () => Promise<number>,
): Promise<Hold | "taken"> {
  const { time, place } = keys;
  const token = newToken();
  let result = await attempt(
    undefined,
    () => redis.eval(HOLD, 2, time, place, token, LOCK_MS, cap) as Promise<number>,
  );
  if (result === -2) return "taken";
  if (result === undefined) return { reserved: false, full: false, release: noop };
  if (result === -1) {
    const seed = await count();
    await attempt(undefined, () => redis.set(place, seed, "PX", COUNTER_MS, "NX"));
    result = await attempt(undefined, () => redis.eval(RESERVE, 1, place, cap) as Promise<number>);
  }
  const reserved = result !== undefined && result > 0;
  return {
    reserved,
    full: result === 0,
    release: async (booked) => {
      const giveBack = reserved && !booked ? "1" : "0";
      await attempt(0, () => redis.eval(UNHOLD, 2, time, place, token, giveBack) as Promise<number>);
    },
  };
}

export function bookingGuard(opts: { redis: Redis; prefix: string }) {
  const { redis, prefix } = opts;
  const timeKey = (workspaceId: string, assigneeUserId: string, startAt: Date) =>
    `${prefix}time:${workspaceId}:${assigneeUserId}:${startAt.getTime()}`;
  const dayKey = (calendarId: string, day: LocalDay) => `${prefix}day:${calendarId}:${day}`;

  return {
    /** Claims an assignee's start time for one attempt (a move); "taken" while another attempt holds it. */
    claimTime: (workspaceId: string, assigneeUserId: string, startAt: Date) =>
      claim(redis, timeKey(workspaceId, assigneeUserId, startAt)),

    /** A booking's hold on its assignee's time and its calendar's day (holdIn). */
    hold: (
      workspaceId: string,
      assigneeUserId: string,
      startAt: Date,
      calendarId: string,
      day: LocalDay,
      cap: number,
      count: () => Promise<number>,
    ) =>
      holdIn(
        redis,
        { time: timeKey(workspaceId, assigneeUserId, startAt), place: dayKey(calendarId, day) },
        cap,
        count,
      ),

    /**
     * Claims an Idempotency-Key while its request is checked and booked, so that a copy sent meanwhile
     * is told at once that it is in flight; "taken" while another request holds it.
     */
    claimKey: (workspaceId: string, key: string) => claim(redis, `${prefix}idem:${workspaceId}:${key}`),

    /** After a change PostgreSQL made to days' counts (cancel, move, keyed booking): rebuilt on next use. */
    async forgetDays(calendarId: string, days: LocalDay[]): Promise<void> {
      await attempt(0, () => redis.del(...days.map((d) => dayKey(calendarId, d))));
    },

    /** The redis dependency for the HealthService: not required, bookings go on without it. */
    async check(): Promise<DependencyStatus> {
      const ok = await attempt(false, async () => (await redis.ping()) === "PONG");
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
