import { rpcClientStats } from "@funil/rpc";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/**
 * Prometheus text at GET /metrics: request counts and latency by route and
 * status, plus what `register` adds (the services' outboxes and consumers).
 */
export const metricsPlugin = fp(async (app: FastifyInstance, opts: { register?: (r: Registry) => void }) => {
  const registry = new Registry();
  opts.register?.(registry);
  collectDefaultMetrics({ register: registry, prefix: "funil_gateway_" });
  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "funil_http_requests_total",
    help: "HTTP requests",
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "funil_http_request_duration_seconds",
    help: "HTTP request latency",
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new Counter({
    name: "funil_rpc_client_calls_total",
    help: "Unary calls made to the services",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(rpcClientStats.calls);
    },
  });
  new Counter({
    name: "funil_rpc_client_batches_total",
    help: "Batches that carried them (the calls made in one turn of the event loop to one service share one)",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(rpcClientStats.batches);
    },
  });
  new Counter({
    name: "funil_rpc_client_streams_total",
    help: "HTTP/2 streams opened for them (a batch channel carries many batches on one)",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(rpcClientStats.streams);
    },
  });
  app.addHook("onResponse", (req, reply, done) => {
    const labels = {
      method: req.method,
      route: req.routeOptions.url ?? "unmatched",
      status: String(reply.statusCode),
    };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
    done();
  });
  app.get("/metrics", { schema: { hide: true } }, async (_req, reply) => {
    reply.header("content-type", registry.contentType);
    return registry.metrics();
  });
});
