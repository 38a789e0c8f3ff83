import type { TestProject } from "vitest/node";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { ensureInfra } from "../../scripts/infra.mjs";
// @ts-expect-error: plain ESM script without types, shared with `npm start`
import { startStack } from "../../scripts/stack.mjs";
import { claimTestEnv, dropDatabases, stackEnv } from "../private-stack.js";

declare module "vitest" {
  export interface ProvidedContext {
    gatewayUrl: string;
    adminToken: string;
    natsUrl: string;
    funilEnv: string;
    authUrl: string;
    crmUrl: string;
    schedulingUrl: string;
    timelineUrl: string;
    webhooksUrl: string;
    learningUrl: string;
    /** Each service's GET /metrics (its first copy's METRICS_PORT). */
    metricsUrls: Record<string, string>;
  }
}

const TEST_ENV = process.env.FUNIL_TEST_ENV ?? "test";

/**
 * The whole stack, started once for the run from the built services, on free
 * ports, with FUNIL_ENV=test: its own databases, streams and subjects, so a
 * development stack on the same machine is never touched.
 */
export default async function setup(project: TestProject) {
  const env = stackEnv({
    FUNIL_ENV: TEST_ENV,
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    RATE_LIMIT_MAX: "100000",
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    // The webhook schedules in milliseconds (docs/operations.md §Configuration), so the tests wait them out: retries after
    // 0.2-1 s (dead after ~3 s), the breaker after 6 s of failing, a receiver that hangs for 1.5 s.
    WEBHOOK_RETRY_SCHEDULE_MS: "200,400,600,800,1000",
    WEBHOOK_BREAKER_WINDOW_MS: "6000",
    WEBHOOK_TIMEOUT_MS: "1500",
    // Few slots, so that a receiver that hangs could take them all if nothing held it to its share
    // (tests/e2e/webhooks.test.ts).
    WEBHOOK_MAX_IN_FLIGHT: "16",
    WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "8",
  });
  await ensureInfra({ databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL, natsUrl: env.NATS_URL });

  // One run per FUNIL_TEST_ENV at a time; then a clean slate: the previous run's test databases go.
  const release = await claimTestEnv(TEST_ENV, env.DATABASE_URL);
  let stack: Awaited<ReturnType<typeof startStack>>;
  try {
    await dropDatabases(TEST_ENV, env.DATABASE_URL);
    stack = await startStack({ env, port: 0, stdio: process.env.STACK_LOG ?? "ignore" });
  } catch (err) {
    await release();
    throw err;
  }
  project.provide("gatewayUrl", stack.gatewayUrl);
  project.provide("adminToken", stack.adminToken);
  project.provide("natsUrl", env.NATS_URL ?? "nats://127.0.0.1:4222");
  project.provide("funilEnv", TEST_ENV);
  project.provide("authUrl", stack.env.AUTH_URL);
  project.provide("crmUrl", stack.env.CRM_URL);
  project.provide("schedulingUrl", stack.env.SCHEDULING_URL);
  project.provide("timelineUrl", stack.env.TIMELINE_URL);
  project.provide("webhooksUrl", stack.env.WEBHOOKS_URL);
  project.provide("learningUrl", stack.env.LEARNING_URL);
  project.provide(
    "metricsUrls",
    Object.fromEntries(
      ["crm", "scheduling", "timeline", "learning", "webhooks"].map((name) => [
        name,
        stack.copies(name)[0].metricsUrl,
      ]),
    ),
  );
  return async () => {
    await stack.stop();
    await release();
  };
}
