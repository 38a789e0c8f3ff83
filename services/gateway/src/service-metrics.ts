import type { CheckResponse } from "@funil/contracts";
import { registerRpcServerMetrics, rpcAddressStats } from "@funil/rpc";
import { Counter, Gauge, type Registry } from "prom-client";
import type { HealthChecks } from "./health.js";

type Answers = () => Promise<Array<readonly [string, CheckResponse | Error]>>;

/** A gauge set from each service's health answer: `fill` sets its values for one service. */
interface HealthGauge {
  name: string;
  help: string;
  labelNames: string[];
  fill: (g: Gauge, service: string, res: CheckResponse) => void;
}

const HEALTH_GAUGES: HealthGauge[] = [
  {
    name: "funil_dependency_up",
    help: "1 when the service reaches the dependency",
    labelNames: ["service", "dependency"],
    fill: (g, service, res) => {
      for (const d of res.dependencies) g.set({ service, dependency: d.name }, d.ok ? 1 : 0);
    },
  },
  {
    name: "funil_outbox_backlog",
    help: "events written but not yet acknowledged by NATS",
    labelNames: ["service"],
    fill: (g, service, res) => {
      if (res.outbox) g.set({ service }, res.outbox.backlog);
    },
  },
  {
    name: "funil_outbox_oldest_age_seconds",
    help: "age of the oldest unpublished event",
    labelNames: ["service"],
    fill: (g, service, res) => {
      if (res.outbox) g.set({ service }, res.outbox.oldestAgeMs / 1000);
    },
  },
  {
    name: "funil_outbox_publish_failures_total",
    help: "failed relay publish attempts since the service started",
    labelNames: ["service"],
    fill: (g, service, res) => {
      if (res.outbox) g.set({ service }, res.outbox.publishFailures);
    },
  },
  {
    name: "funil_consumer_redeliveries_total",
    help: "messages redelivered to the service's consumer",
    labelNames: ["service", "consumer"],
    fill: (g, service, res) => {
      for (const c of res.consumers) g.set({ service, consumer: c.name }, c.redeliveries);
    },
  },
  {
    name: "funil_consumer_lag_seconds",
    help: "age of the last message the consumer handled, when it handled it",
    labelNames: ["service", "consumer"],
    fill: (g, service, res) => {
      for (const c of res.consumers) g.set({ service, consumer: c.name }, c.lagMs / 1000);
    },
  },
  {
    name: "funil_consumer_pending",
    help: "messages the consumer has not acknowledged yet",
    labelNames: ["service", "consumer"],
    fill: (g, service, res) => {
      for (const c of res.consumers)
        if (c.pending !== undefined) g.set({ service, consumer: c.name }, c.pending);
    },
  },
];

/** Gauges read from every service at scrape time (one Check per service per scrape). */
export const serviceMetrics = (health: HealthChecks) => (registry: Registry) => {
  // The calls the gateway's own RPC server (AuthService) answers.
  registerRpcServerMetrics(registry);
  const answers = sharedAnswers(health);
  addressCalls(registry);
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
  for (const { name, help, labelNames, fill } of HEALTH_GAUGES)
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
};

/** The services' health answers, asked once for all the gauges of one scrape (500 ms). */
function sharedAnswers(health: HealthChecks): Answers {
  let scrape: { at: number; answers: ReturnType<Answers> } | undefined;
  return () => {
    if (!scrape || Date.now() - scrape.at > 500) scrape = { at: Date.now(), answers: health.ask() };
    return scrape.answers;
  };
}

/** What the gateway's RPC clients sent to each copy of each service. */
function addressCalls(registry: Registry) {
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
}
