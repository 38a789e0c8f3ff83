import { context, SpanKind, SpanStatusCode, sampled, tracer, tracingOn } from "@funil/telemetry";
import { type Command, Redis } from "ioredis";
import { outsideTransaction } from "./transactions.js";

/** What the Redis client logs through (a pino logger fits). */
export interface RedisLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * The Redis client of every process that uses one (the gateway's rate limit and key cache, scheduling's
 * booking guard), set to fail fast: each user has a fallback that needs no Redis, so no request ever
 * waits for it. A command while it is away fails at once instead of queueing, one slow to answer fails
 * after 300 ms, and the client reconnects every 100–500 ms. An outage is two log lines: one when it
 * goes (saying what runs instead: `fallback`), one when it is back.
 *
 * Each command is checked to run outside any PostgreSQL transaction (transactions.ts) and, when
 * tracing is on, is a CLIENT span of its own under the active sampled span.
 */
export function openRedis(url: string, log: RedisLog, fallback: string): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 300,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(100 * attempt, 500),
  });
  let downSince: number | undefined;
  const down = (cause: string) => {
    if (downSince !== undefined) return;
    downSince = Date.now();
    log.warn({ cause }, `Redis unavailable: ${fallback}; reconnecting`);
  };
  redis.on("error", (err: Error) => down(err.message));
  redis.on("close", () => down("connection closed"));
  redis.on("ready", () => {
    if (downSince === undefined) return;
    log.info({ downMs: Date.now() - downSince }, "Redis back");
    downSince = undefined;
  });
  return watchCommands(redis);
}

/** Puts the transaction check and, traced, the command's span in front of every command sent. */
function watchCommands(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command: Command, stream?: Parameters<Redis["sendCommand"]>[1]) => {
    outsideTransaction(`Redis ${command.name.toUpperCase()}`);
    const sent = send(command, stream);
    if (tracingOn()) spanOf(command);
    return sent;
  };
  return redis;
}

/** The command's CLIENT span (named after it, never its keys or values), ended when it settles. */
function spanOf(command: Command): void {
  const active = context.active();
  if (!sampled(active)) return;
  const name = command.name.toUpperCase();
  const span = tracer().startSpan(
    name,
    { kind: SpanKind.CLIENT, attributes: { "db.system.name": "redis", "db.operation.name": name } },
    active,
  );
  command.promise.then(
    () => span.end(),
    () => {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  );
}
