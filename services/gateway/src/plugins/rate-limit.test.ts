import { createServer } from "node:net";
import { openRedis } from "@funil/db/redis";
import Fastify, { type FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import type { Caller } from "../key-cache.js";
import { errorsPlugin } from "./errors.js";
import { rateLimitPlugin } from "./rate-limit.js";

/**
 * The rate limit in-process on a real Redis (docs/api/conventions.md §Rate limits): a Fastify app per
 * gateway copy, its caller named by a test header where the auth plugin would have set it.
 */
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const log = pino({ level: "silent" });
const opened: Array<{ app: FastifyInstance; redis: Redis }> = [];
let run = 0;

async function gatewayCopy(opts: { max: number; prefix: string; redisUrl?: string }) {
  const redis = openRedis(opts.redisUrl ?? REDIS_URL, log, "the rate limit runs locally");
  const app = Fastify({ logger: false });
  await app.register(errorsPlugin);
  app.addHook("onRequest", async (req) => {
    const caller: Caller = {
      keyId: String(req.headers["x-key"]),
      workspaceId: "ws",
      scopes: new Set(),
      operator: false,
    };
    req.caller = caller;
  });
  await app.register(rateLimitPlugin, { redis, prefix: opts.prefix, max: opts.max, windowMs: 60_000 });
  app.get("/ping", async () => ({ ok: true }));
  opened.push({ app, redis });
  return app;
}
afterAll(async () => {
  for (const { app, redis } of opened) {
    await app.close();
    redis.disconnect();
  }
});

const prefix = () => `funil:${process.env.FUNIL_TEST_ENV}:rl-test:${Date.now()}:${++run}:`;
const ping = (app: FastifyInstance, key: string) =>
  app.inject({ method: "GET", url: "/ping", headers: { "x-key": key } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("docs/api/conventions.md §Rate limits", () => {
  it("each answer carries x-ratelimit-*; over the budget a 429 rate_limited with retry-after; each key has its own", async () => {
    const app = await gatewayCopy({ max: 3, prefix: prefix() });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await ping(app, "key_a");
      expect(res.statusCode).toBe(200);
      expect(res.headers["x-ratelimit-limit"]).toBe("3");
      expect(Number(res.headers["x-ratelimit-reset"])).toBeGreaterThan(0);
      remaining.push(String(res.headers["x-ratelimit-remaining"]));
    }
    expect(remaining).toEqual(["2", "1", "0"]);
    const over = await ping(app, "key_a");
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe("rate_limited");
    expect(Number(over.headers["retry-after"])).toBeGreaterThan(0);
    expect(over.headers["x-ratelimit-remaining"]).toBe("0");
    expect((await ping(app, "key_b")).statusCode).toBe(200);
  });

  it("the budget is shared by every gateway copy through Redis", async () => {
    const shared = prefix();
    const [a, b] = [
      await gatewayCopy({ max: 10, prefix: shared }),
      await gatewayCopy({ max: 10, prefix: shared }),
    ];
    for (let i = 0; i < 8; i++) expect((await ping(a, "key_s")).statusCode).toBe(200);
    await sleep(400); // a few of the limiter's syncs (every 100 ms)
    let admittedByB = 0;
    for (let i = 0; i < 10; i++) if ((await ping(b, "key_s")).statusCode === 200) admittedByB++;
    // 10 in all, plus at most one admission per other copy not yet synced (the limiter's bound).
    expect(admittedByB).toBeGreaterThanOrEqual(2);
    expect(admittedByB).toBeLessThanOrEqual(3);
  });

  it("with Redis away each copy limits on its own, and no request waits for Redis", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const { port } = closed.address() as { port: number };
    await new Promise((r) => closed.close(r));
    const app = await gatewayCopy({ max: 3, prefix: prefix(), redisUrl: `redis://127.0.0.1:${port}` });
    const codes: number[] = [];
    const started = performance.now();
    for (let i = 0; i < 5; i++) codes.push((await ping(app, "key_o")).statusCode);
    expect(performance.now() - started).toBeLessThan(500);
    expect(codes).toEqual([200, 200, 200, 429, 429]);
  });
});
