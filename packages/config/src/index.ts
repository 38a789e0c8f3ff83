import { isSpanContextValid, type Span, TraceFlags, trace } from "@opentelemetry/api";
import { type Logger, pino } from "pino";
import { z } from "zod";

export { z };

const DAY_MS = 86_400_000;
/** A retention in ms: at least a second, at most ten years. */
const retention = (fallback: number) =>
  z.coerce
    .number()
    .int()
    .min(1000)
    .max(3650 * DAY_MS)
    .default(fallback);

/** Settings every process shares (docs/operations.md §Configuration). */
export const baseEnv = z.object({
  FUNIL_ENV: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,30}$/, "lower-case letters, digits and _ only")
    .optional(),
  DATABASE_URL: z.url().default("postgres://postgres@127.0.0.1:5432/postgres"),
  /**
   * Connections each process's request pool may hold open to its database; a service's outbox relay
   * holds one more. 3: a default stack then needs at most 23 of PostgreSQL's 100 (docs/operations.md §Connections).
   */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(100).default(3),
  /** Seconds an idle pooled connection stays open before it is released (0: kept until the process ends). */
  DATABASE_IDLE_TIMEOUT_S: z.coerce.number().int().min(0).max(86_400).default(30),
  REDIS_URL: z.url().default("redis://127.0.0.1:6379"),
  NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
  /** Servers of a JetStream cluster that keep a copy of every stream: 1 on a lone server, 3 on Kubernetes. */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /**
   * How long each stream keeps a message (docs/operations.md §Retention). A consumer down for longer
   * loses what it did not take; the webhook jobs must outlive the retry schedule (about 15 h by default).
   */
  EVENTS_MAX_AGE_MS: retention(7 * DAY_MS),
  INGEST_MAX_AGE_MS: retention(7 * DAY_MS),
  PLATFORM_MAX_AGE_MS: retention(7 * DAY_MS),
  WEBHOOK_JOBS_MAX_AGE_MS: retention(7 * DAY_MS),
  /**
   * How long a consumer remembers a message it handled (the inbox rows): at least as long as any stream
   * keeps a message, or a message still in a stream could be applied twice (checked at start).
   */
  INBOX_RETENTION_MS: retention(8 * DAY_MS),
  /** How often each process sweeps what its retention settings let go. */
  RETENTION_SWEEP_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10 * 60_000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /**
   * Secrets that sign list cursors, comma-separated: the first signs new cursors, every one verifies
   * (rotation: put the new key first, keep the old one until the cursors in flight expire). Every
   * process must share them. Unset or empty: a fixed development key, with a warning at start.
   */
  CURSOR_KEYS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((k) => k.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().min(16, "each key must be at least 16 characters")))
    .transform((keys) => (keys.length > 0 ? keys : undefined)),
  /** How often a client looks up the host names of the services it calls again (new or gone copies). */
  RPC_RESOLVE_MS: z.coerce.number().int().min(100).default(5000),
  /** A server ends (gracefully) a connection older than this, so that new copies get their share. */
  RPC_MAX_CONNECTION_AGE_MS: z.coerce.number().int().min(1000).default(300_000),
  /** HTTP/2 PING interval of a client's connections; no answer within it: the connection is dead. */
  RPC_KEEPALIVE_MS: z.coerce.number().int().min(100).default(10_000),
  /**
   * The longest RPC message (a request, an answer, a batch frame) a server reads or writes and a client
   * sends or reads; a longer one is refused resource_exhausted without being held. 64 MiB: a page of 500
   * contacts at every text limit is about 50 MB.
   */
  RPC_MAX_MESSAGE_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(1024 * 1024 * 1024)
    .default(64 * 1024 * 1024),
  /** A service's Prometheus /metrics on plain HTTP/1.1 (its RPC port speaks HTTP/2 only); unset: none. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
});

const isHttpUrl = (value: string) => {
  try {
    return new URL(value).protocol === "http:";
  } catch {
    return false;
  }
};

/**
 * `<NAME>_URL`, where a process finds another service: one http:// base URL, or several separated by
 * commas (one per copy); a host name in it may also resolve to several addresses (a Kubernetes headless
 * Service, compose replicas), each a copy.
 */
export const rpcUrl = z
  .string()
  .trim()
  .refine(
    (v) => v.split(",").every((u) => isHttpUrl(u.trim())),
    "one http:// base URL, or several separated by commas",
  );

export const port = z.coerce.number().int().min(0).max(65535);
export const booleanFlag = z
  .enum(["true", "false", "1", "0", ""])
  .default("false")
  .transform((v) => v === "true" || v === "1");

export class ConfigError extends Error {}

/**
 * Parses the environment once, at start. A bad value stops the process with a
 * message that names the variable.
 */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  return result.data;
}

/** Names derived from FUNIL_ENV, so a test stack never touches a development one. */
export function naming(env: string | undefined) {
  return {
    database: (service: string) => (env ? `funil_${env}_${service}` : `funil_${service}`),
    stream: (name: string) => (env ? `${env.toUpperCase()}_${name}` : name),
    subject: (subject: string) => (env ? `${env}.${subject}` : subject),
  };
}
export type Naming = ReturnType<typeof naming>;

/** Secrets that must never reach a log line. */
const redact = [
  "req.headers.authorization",
  "headers.authorization",
  "authorization",
  "secret",
  "*.secret",
  "password",
];

/** A process's logger; `traced` (tracing is on): its lines carry the active span's ids (traceFields). */
export function createLogger(service: string, level: string, traced = false): Logger {
  return pino({
    name: service,
    level,
    redact: { paths: redact, censor: "[redacted]" },
    ...(traced ? { mixin: traceFields } : {}),
  });
}

/** Marks a logger whose bindings already name the span (traceBound): the mixin adds nothing to its lines. */
const BOUND = Symbol("funil.traceBound");

/**
 * The pino mixin of every process's logger: a line written inside a traced piece of work (a request, an
 * RPC method, a consumed message, sampled) carries the active span's `trace_id` and `span_id`, so that
 * the log and the trace find each other. Work not sampled has no trace to find, and its lines name none.
 * Tracing off, it is not installed at all.
 */
export function traceFields(_obj: object, _level: number, logger?: Logger): object {
  if (logger && (logger as unknown as Record<symbol, boolean>)[BOUND]) return {};
  const span = trace.getActiveSpan();
  if (!span) return {};
  const ids = span.spanContext();
  return isSpanContextValid(ids) && (ids.traceFlags & TraceFlags.SAMPLED) !== 0
    ? { trace_id: ids.traceId, span_id: ids.spanId }
    : {};
}

/**
 * A child of `log` whose every line names `span`, with `bindings` of its own besides (the gateway's
 * request logger: Fastify writes the lines of a request, "incoming request" and "request completed"
 * among them, outside the handler where the span is active).
 */
export function traceBound(log: Logger, span: Span, bindings: object = {}, options?: object): Logger {
  const ids = span.spanContext();
  const child = log.child({ ...bindings, trace_id: ids.traceId, span_id: ids.spanId }, options);
  (child as unknown as Record<symbol, boolean>)[BOUND] = true;
  return child;
}
export type { Logger };

/** Time comes from here, so tests can move it. */
export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

/** Runs main() and turns a configuration error into a clear exit. */
export function runMain(main: () => Promise<unknown>): void {
  main().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
    } else {
      process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    }
    process.exit(1);
  });
}
