import { baseEnv, port, rpcUrl, z } from "@funil/config";
import { SERVICES } from "@funil/contracts";

/**
 * `<NAME>_URL` of every backend service: where the gateway finds it (7001, 7002… by default), one base URL,
 * several separated by commas, or a host name with an address per copy.
 */
const serviceUrls = Object.fromEntries(
  Object.keys(SERVICES).map((name, i) => [
    `${name.toUpperCase()}_URL`,
    rpcUrl.default(`http://127.0.0.1:${7001 + i}`),
  ]),
) as { [N in keyof typeof SERVICES as `${Uppercase<N>}_URL`]: z.ZodDefault<typeof rpcUrl> };

export const gatewayConfig = baseEnv.extend({
  PORT: port.default(8080),
  HOST: z.string().default("0.0.0.0"),
  /** Internal Connect Auth service (never public): other services ask it for a key's current scopes. */
  AUTH_PORT: port.default(7100),
  AUTH_HOST: z.string().default("127.0.0.1"),
  ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  ...serviceUrls,
  /** Requests per key per window. */
  RATE_LIMIT_MAX: z.coerce.number().int().min(1).default(1200),
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(100).default(60_000),
  /** How long a resolved key is cached; revocations and scope changes invalidate at once. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /**
   * Time between SIGTERM (from then on /readyz answers 503) and the listener closing, so that a load
   * balancer that follows readiness stops sending new requests before connections are refused. 0 where
   * the orchestrator already waits (Kubernetes' preStop) or nothing balances the gateway.
   */
  SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(0),
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

/** The URL of one backend service, from its `<NAME>_URL` setting. */
export const serviceUrl = (config: GatewayConfig, name: keyof typeof SERVICES): string =>
  (config as unknown as Record<string, string>)[`${name.toUpperCase()}_URL`]!;
