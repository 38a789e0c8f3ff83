import type { CheckResponse } from "@funil/contracts";
import { registerRpcServerMetrics, rpcAddressStats } from "@funil/rpc";
import { Counter, Gauge, type Registry } from "prom-client";
import type { HealthChecks } from "./health.js";

/** Gauges read from every service at scrape time (one Check per service per scrape). */
export const serviceMetrics = (health: HealthChecks) => (registry: Registry) => {
  // The calls the gateway's own RPC server (AuthService) answers.
  registerRpcServerMetrics(registry);
  let scrape: { at: number; answers: Promise<Array<readonly [string, CheckResponse | Error]>> } | undefined;
  const answers = () => {
    if (!scrape || Date.now() - scrape.at > 500) scrape = { at: Date.now(), answers: health.ask() };
    return scrape.answers;
  };
  const gauge = (
    name: string,
    help: string,
    labelNames: string[],
    fill: (g: Gauge, name: string, res: CheckResponse) => void,
  ) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        for (const [service, res] of await answers()) if (!(res instanceof Error)) fill(this, service, res);
      },
    });
  new Counter({
    name: "funil_rpc_client_address_calls_total",
    help: "Calls sent to each address (copy) of each service; a call sent again to another copy counts at both",
    labelNames: ["service", "address"],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of rpcAddressStats()) this.inc({ service: s.service, address: s.address }, s.calls);
    },
  });
  new Gauge({
    name: "funil_service_up",
    help: "1 when the service answers its health check",
    labelNames: ["service"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [service, res] of await answers()) this.set({ service }, res instanceof Error ? 0 : 1);
    },
  });
  gauge(
    "funil_dependency_up",
    "1 when the service reaches the dependency",
    ["service", "dependency"],
    (g, service, res) => {
      for (const d of res.dependencies) g.set({ service, dependency: d.name }, d.ok ? 1 : 0);
    },
  );
  gauge(
    "funil_outbox_backlog",
    "events written but not yet acknowledged by NATS",
    ["service"],
    (g, service, res) => {
      if (res.outbox) g.set({ service }, res.outbox.backlog);
    },
  );
  gauge(
    "funil_outbox_oldest_age_seconds",
    "age of the oldest unpublished event",
    ["service"],
    (g, service, res) => {
      if (res.outbox) g.set({ service }, res.outbox.oldestAgeMs / 1000);
    },
  );
  gauge(
    "funil_outbox_publish_failures_total",
    "failed relay publish attempts since the service started",
    ["service"],
    (g, service, res) => {
      if (res.outbox) g.set({ service }, res.outbox.publishFailures);
    },
  );
  gauge(
    "funil_consumer_redeliveries_total",
    "messages redelivered to the service's consumer",
    ["service", "consumer"],
    (g, service, res) => {
      for (const c of res.consumers) g.set({ service, consumer: c.name }, c.redeliveries);
    },
  );
  gauge(
    "funil_consumer_lag_seconds",
    "age of the last message the consumer handled, when it handled it",
    ["service", "consumer"],
    (g, service, res) => {
      for (const c of res.consumers) g.set({ service, consumer: c.name }, c.lagMs / 1000);
    },
  );
  gauge(
    "funil_consumer_pending",
    "messages the consumer has not acknowledged yet",
    ["service", "consumer"],
    (g, service, res) => {
      for (const c of res.consumers)
        if (c.pending !== undefined) g.set({ service, consumer: c.name }, c.pending);
    },
  );
};
