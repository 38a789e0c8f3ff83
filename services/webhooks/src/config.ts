import { baseEnv, booleanFlag, port, rpcUrl, z } from "@funil/config";

const ms = z.coerce.number().int().min(0);
/** A retention in days; a fraction is allowed (the soak test keeps seconds: 0.00005 is 4.3 s). */
const days = z.coerce.number().positive();

/** Delays before attempts 2..6 (docs/operations.md §Configuration), in milliseconds, comma-separated. */
const schedule = z
  .string()
  .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, "comma-separated milliseconds, e.g. 60000,300000")
  .transform((v) => v.split(",").map((d) => Number(d.trim())));

/** 32 bytes, as 64 hex characters or base64. */
const secretKey = z
  .string()
  .transform((v) => (/^[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v, "hex") : Buffer.from(v, "base64")))
  .refine((b) => b.length === 32, "must be 32 bytes, as 64 hex characters or base64");

export const webhooksConfig = baseEnv.extend({
  WEBHOOKS_PORT: port.default(7004),
  HOST: z.string().default("127.0.0.1"),
  /** The gateway's internal Auth service: a key's current scopes, asked at every attempt. */
  AUTH_URL: rpcUrl.default("http://127.0.0.1:7100"),
  WEBHOOK_RETRY_SCHEDULE_MS: schedule.default([60_000, 300_000, 1_800_000, 7_200_000, 43_200_000]),
  WEBHOOK_BREAKER_WINDOW_MS: ms.default(259_200_000),
  WEBHOOK_TIMEOUT_MS: ms.min(1).default(10_000),
  WEBHOOK_ALLOW_HTTP: booleanFlag,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: booleanFlag,
  /** Encrypts the signing secrets at rest (AES-256-GCM); unset, they are stored as they are. */
  WEBHOOK_SECRET_KEY: z.preprocess((v) => (v === "" ? undefined : v), secretKey.optional()),
  /** Attempts in flight at once, overall and per subscription: a slow receiver holds only its share. */
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).default(256),
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: z.coerce.number().int().min(1).default(16),
  /** How long the attempt log keeps an attempt (docs/api/webhooks.md §Attempt log). */
  WEBHOOK_ATTEMPT_RETENTION_DAYS: days.default(30),
  /**
   * How long a delivery that is over (delivered or dead) is kept: the deliveries list and recover reach
   * back this far (docs/operations.md §Retention). A pending delivery is never swept.
   */
  WEBHOOK_DELIVERY_RETENTION_DAYS: days.default(30),
  /** How long the event log keeps an event: how far back GET /events reaches (docs/operations.md §Retention). */
  EVENT_LOG_RETENTION_DAYS: days.default(30),
});
export type WebhooksConfig = z.output<typeof webhooksConfig>;
