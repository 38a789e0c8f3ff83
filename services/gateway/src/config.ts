import { baseEnv, port, z } from "@funil/config";

export const gatewayConfig = baseEnv.extend({
  PORT: port.default(8080),
  HOST: z.string().default("0.0.0.0"),
  /** Internal Connect Auth service (never public): other services ask it for a key's current scopes. */
  AUTH_PORT: port.default(7100),
  AUTH_HOST: z.string().default("127.0.0.1"),
  ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  CRM_URL: z.url().default("http://127.0.0.1:7001"),
  /** Requests per key per window. */
  RATE_LIMIT_MAX: z.coerce.number().int().min(1).default(1200),
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(100).default(60_000),
  /** How long a resolved key is cached; revocations and scope changes invalidate at once. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** Origins browsers may call the API from, comma-separated (`*`: any); unset: no CORS. */
  CORS_ORIGINS: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z.union([
          z.literal("*"),
          z.string().regex(/^https?:\/\/[^/\s]+$/, "origins are scheme://host[:port]"),
        ]),
      ),
    ),
});
export type GatewayConfig = z.output<typeof gatewayConfig>;
