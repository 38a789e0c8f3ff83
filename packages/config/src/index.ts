import { type Logger, pino } from "pino";
import { z } from "zod";

export { z };

/** Settings every process shares (API.md §13). */
export const baseEnv = z.object({
  FUNIL_ENV: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,30}$/, "lower-case letters, digits and _ only")
    .optional(),
  DATABASE_URL: z.url().default("postgres://postgres@127.0.0.1:5432/postgres"),
  /**
   * Connections each process's request pool may hold open to its database; a service's outbox relay
   * holds two more. 3: a default stack then needs at most 28 of PostgreSQL's 100 (README "Connections").
   */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(100).default(3),
  /** Seconds an idle pooled connection stays open before it is released (0: kept until the process ends). */
  DATABASE_IDLE_TIMEOUT_S: z.coerce.number().int().min(0).max(86_400).default(30),
  REDIS_URL: z.url().default("redis://127.0.0.1:6379"),
  NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
  /** Servers of a JetStream cluster that keep a copy of every stream: 1 on a lone server, 3 on Kubernetes. */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
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

export function createLogger(service: string, level: string): Logger {
  return pino({ name: service, level, redact: { paths: redact, censor: "[redacted]" } });
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
