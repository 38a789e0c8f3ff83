import { fail } from "@funil/errors";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import type { Redis } from "ioredis";
import { rateLimiter } from "../rate-limit.js";

/**
 * RATE_LIMIT_MAX requests per key per RATE_LIMIT_WINDOW_MS (docs/api/conventions.md §Rate limits), every
 * answer with x-ratelimit-limit/-remaining/-reset, over it a 429 rate_limited
 * with retry-after. Replaces @fastify/rate-limit, which asked Redis on every
 * request and, with Redis away, either waited on it or stopped limiting.
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, opts: { redis: Redis; prefix: string; max: number; windowMs: number }) => {
    const limiter = rateLimiter(opts);
    app.addHook("onClose", async () => limiter.close());
    // Right after authentication (onRequest, registered after the auth plugin): requests later refused
    // for their scope or by validation still count, and carry the x-ratelimit-* headers.
    app.addHook("onRequest", async (req, reply) => {
      const d = await limiter.take(req.caller?.keyId ?? req.ip);
      const resetS = Math.max(1, Math.ceil(d.resetMs / 1000));
      reply.header("x-ratelimit-limit", d.limit);
      reply.header("x-ratelimit-remaining", d.remaining);
      reply.header("x-ratelimit-reset", resetS);
      if (!d.allowed) {
        reply.header("retry-after", resetS);
        throw fail("rate_limited", "too many requests for this key; see retry-after");
      }
    });
  },
);
