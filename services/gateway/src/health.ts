import { HealthService, SERVICES, type ServiceName } from "@funil/contracts";
import type { Sql } from "@funil/db";
import { causeOf, rpcClient, rpcOptions } from "@funil/rpc";
import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { type GatewayConfig, serviceUrl } from "./config.js";

/** A dependency as /readyz shows it; `required` ones make it 503 when down. */
interface Check {
  ok: boolean;
  required: boolean;
  detail?: string;
  dependencies?: Record<string, Check>;
}

const HEALTH_TIMEOUT_MS = 1000;

/**
 * /readyz, and the health answers the per-service part of /metrics reads (service-metrics.ts). Readiness rules (docs/operations.md
 * §Readiness and liveness): 503 when the gateway's PostgreSQL, a service, or a service's
 * PostgreSQL is down — requests would fail; 200 "degraded" when only Redis
 * (rate limit and key cache go local) or NATS (events wait in the outboxes)
 * is away — requests still succeed.
 */
export function healthChecks(deps: { sql: Sql; redis: Redis; config: GatewayConfig }) {
  // Every service of the one list serves a HealthService beside its own (packages/rpc startService).
  const services = Object.fromEntries(
    (Object.keys(SERVICES) as ServiceName[]).map((name) => [
      name,
      rpcClient(HealthService, serviceUrl(deps.config, name), HEALTH_TIMEOUT_MS, {
        ...rpcOptions(deps.config),
        name,
      }),
    ]),
  );
  const within = <T>(work: Promise<T>) =>
    Promise.race([
      work,
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)),
          HEALTH_TIMEOUT_MS,
        ).unref(),
      ),
    ]);
  const ask = () =>
    Promise.all(
      Object.entries(services).map(async ([name, client]) => {
        const res = await client
          .check({}, { timeoutMs: HEALTH_TIMEOUT_MS })
          .catch((err: unknown) => err as Error);
        return [name, res] as const;
      }),
    );

  const databaseCheck = (): Promise<Check> =>
    within(deps.sql`select 1`).then(
      () => ({ ok: true, required: true }),
      (err: unknown) => ({ ok: false, required: true, detail: causeOf(err) }),
    );

  /** This copy alone: its own database (keys) answers. */
  async function selfReadiness() {
    const postgresql = await databaseCheck();
    const failed = postgresql.ok ? [] : ["postgresql"];
    return { status: postgresql.ok ? "ready" : "unavailable", checks: { postgresql }, failed };
  }

  async function readiness() {
    const [database, services] = await Promise.all([databaseCheck(), ask()]);
    const checks: Record<string, Check> = {
      postgresql: database,
      redis:
        deps.redis.status === "ready"
          ? { ok: true, required: false }
          : { ok: false, required: false, detail: `redis ${deps.redis.status}` },
    };
    let busSeen = false;
    let busDown: string[] = [];
    for (const [name, res] of services) {
      if (res instanceof Error) {
        checks[name] = { ok: false, required: true, detail: "not answering" };
        continue;
      }
      const dependencies = Object.fromEntries(
        res.dependencies.map((d) => [
          d.name,
          { ok: d.ok, required: d.required, ...(d.detail ? { detail: d.detail } : {}) },
        ]),
      );
      const ok = res.dependencies.every((d) => d.ok || !d.required);
      checks[name] = { ok, required: true, dependencies };
      const nats = res.dependencies.find((d) => d.name === "nats");
      if (nats) {
        busSeen = true;
        if (!nats.ok) busDown = [...busDown, name];
      }
    }
    if (busSeen)
      checks.nats = busDown.length
        ? { ok: false, required: false, detail: `disconnected from ${busDown.join(", ")}` }
        : { ok: true, required: false };
    const failed = Object.entries(checks).filter(([, c]) => !c.ok);
    const status = failed.some(([, c]) => c.required) ? "unavailable" : failed.length ? "degraded" : "ready";
    return { status, checks, failed: failed.map(([n]) => n) };
  }

  return { readiness, selfReadiness, ask };
}
export type HealthChecks = ReturnType<typeof healthChecks>;

/**
 * GET /readyz: the checks in the body; 503 (with the error body) when a required one failed (every
 * backing service, or with ?scope=self the gateway's own database only). A gateway
 * asked to stop is not ready from that moment on, whatever its dependencies say: a load balancer still
 * polling it sends new clients elsewhere while it answers the requests it has read.
 */
export function readyzRoute(app: FastifyInstance, health: HealthChecks, stopping: () => boolean) {
  app.get("/readyz", { schema: { hide: true } }, async (req, reply) => {
    if (stopping()) {
      reply.header("retry-after", "1");
      return reply.code(503).send({ error: { code: "unavailable", message: "not ready: stopping" } });
    }
    // ?scope=self, for an orchestrator's readiness probe: only what this copy needs to take requests. A
    // backing service that is down must not take every gateway copy out of the balancer: they answer 503
    // unavailable on that service's routes and keep serving the others.
    const self = (req.query as { scope?: unknown }).scope === "self";
    const { status, checks, failed } = self ? await health.selfReadiness() : await health.readiness();
    if (status === "unavailable") {
      reply.header("retry-after", "1");
      return reply.code(503).send({
        error: { code: "unavailable", message: `not ready: ${failed.join(", ")}` },
        status,
        checks,
      });
    }
    return { status, checks };
  });
}
