import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { BusWatch, Consumer } from "@funil/bus";
import { type Health, HealthCheckResponse_ServingStatus, HealthService } from "@funil/contracts";
import { type OutboxRelay, outboxBacklog, type Sql } from "@funil/db";
import { causeOf } from "./errors.js";

/** How long a dependency may take to answer a health check before it counts as down. */
const CHECK_TIMEOUT_MS = 1000;

function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    work.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

/**
 * The HealthService of one service (proto/funil/health/v1): its database
 * (required: without it nothing is answered), its bus connection (not
 * required: events wait in the outbox), the outbox backlog and the relay's
 * failures, and its consumers' redeliveries and lag. The gateway's /readyz
 * and /metrics read it.
 */
export interface HealthSources {
  service: string;
  sql: Sql;
  bus?: BusWatch;
  relay?: OutboxRelay;
  consumers?: Consumer[];
  /** The service's own dependencies (scheduling: its Redis). */
  dependencies?: () => Promise<DependencyStatus[]>;
}

export interface DependencyStatus {
  name: string;
  required: boolean;
  ok: boolean;
  detail: string;
}

export function healthService(sources: HealthSources): ServiceImpl<typeof HealthService> {
  return {
    async check() {
      const outbox = await within(CHECK_TIMEOUT_MS, outboxBacklog(sources.sql)).then(
        (o) => ({ ok: true as const, ...o }),
        (err: unknown) => ({ ok: false as const, detail: causeOf(err) }),
      );
      const dependencies = [
        { name: "postgresql", required: true, ok: outbox.ok, detail: outbox.ok ? "" : outbox.detail },
      ];
      if (sources.bus) {
        const bus = sources.bus.state();
        dependencies.push({
          name: "nats",
          required: false,
          ok: bus.connected,
          detail: bus.connected ? "" : `disconnected since ${bus.since.toISOString()}`,
        });
      }
      if (sources.dependencies) dependencies.push(...(await sources.dependencies()));
      const consumers = await Promise.all((sources.consumers ?? []).map((c) => c.stats()));
      return {
        service: sources.service,
        dependencies,
        outbox: sources.relay && {
          backlog: outbox.ok ? outbox.backlog : 0,
          oldestAgeMs: outbox.ok ? outbox.oldestAgeMs : 0,
          publishFailures: sources.relay.stats().publishFailures,
        },
        consumers,
      };
    },
  };
}
/**
 * The standard gRPC health service (grpc.health.v1: Kubernetes' gRPC probes, grpc_health_probe, load
 * balancers). Check answers SERVING while the database answers (when the server has one) and the server
 * is not stopping, NOT_SERVING otherwise; the service "" is the server as a whole, and the other names
 * it knows are those of the Connect services it serves and the service's own name; any other is
 * NOT_FOUND. Watch is left Unimplemented (the protocol allows it; probes use Check).
 */
export function grpcHealthService(opts: {
  names: () => ReadonlySet<string>;
  sql?: Sql;
  stopping: () => boolean;
}): Partial<ServiceImpl<typeof Health>> {
  const { SERVING, NOT_SERVING } = HealthCheckResponse_ServingStatus;
  return {
    async check(req) {
      if (req.service !== "" && !opts.names().has(req.service))
        throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      if (opts.stopping()) return { status: NOT_SERVING };
      const sql = opts.sql;
      const database = sql
        ? await within(CHECK_TIMEOUT_MS, sql`select 1`).then(
            () => true,
            () => false,
          )
        : true;
      return { status: database && !opts.stopping() ? SERVING : NOT_SERVING };
    },
  };
}

export { HealthService };
