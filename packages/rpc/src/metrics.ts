import * as http from "node:http";
import { type Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { BatchService } from "@funil/contracts";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/**
 * The RED metrics of the calls a process serves, per RPC method (docs/operations.md §Metrics): how many,
 * with which Connect code, and how long each took from its request read to its answer made. Every call
 * counts once, alone or inside a batch; a batch's own envelope (BatchService) is not a call.
 */
const calls = new Counter({
  name: "funil_rpc_server_calls_total",
  help: "RPC calls answered, by Connect service, method and code (ok, not_found, unavailable…)",
  labelNames: ["service", "method", "code"],
  registers: [],
});
const duration = new Histogram({
  name: "funil_rpc_server_duration_seconds",
  help: "Time from an RPC call's request read to its answer made",
  labelNames: ["service", "method"],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [],
});

/** Adds the server's RPC metrics to a registry (a service's METRICS_PORT, the gateway's /metrics). */
export function registerRpcServerMetrics(registry: Registry) {
  registry.registerMetric(calls);
  registry.registerMetric(duration);
}

/** One method's series, made once: counting a call is then an increment and an observation. */
export interface MethodMetrics {
  /** `code` undefined: the call succeeded. `startedAt`: performance.now() when its request was read. */
  done(code: Code | undefined, startedAt: number): void;
}

const methods = new Map<string, MethodMetrics>();

export function methodMetrics(service: string, method: string): MethodMetrics {
  const key = `${service}/${method}`;
  let m = methods.get(key);
  if (!m) {
    const ok = calls.labels(service, method, "ok");
    const took = duration.labels(service, method);
    m = {
      done(code, startedAt) {
        took.observe((performance.now() - startedAt) / 1000);
        if (code === undefined) ok.inc();
        else calls.inc({ service, method, code: codeToString(code) });
      },
    };
    methods.set(key, m);
  }
  return m;
}

/**
 * The calls connect-node's adapter answers (gRPC, gRPC-web, Connect JSON): first of its interceptors, so
 * that the code counted is the one the caller gets. The lean path counts its own (unary-handler.ts).
 */
export const measureCalls: Interceptor = (next) => async (req) => {
  if (req.service.typeName === BatchService.typeName) return next(req);
  const m = methodMetrics(req.service.typeName, req.method.name);
  const startedAt = performance.now();
  try {
    const res = await next(req);
    m.done(undefined, startedAt);
    return res;
  } catch (err) {
    m.done(ConnectError.from(err).code, startedAt);
    throw err;
  }
};

/**
 * A service's metrics on a plain HTTP/1.1 listener (METRICS_PORT): its RPC port speaks HTTP/2 without
 * TLS, which Prometheus does not scrape. GET /metrics answers the RPC metrics and the process's own
 * (CPU, memory, event loop, GC, prefixed `funil_<name>_` as the gateway's are `funil_gateway_`).
 */
export async function startMetricsServer(opts: { name: string; port: number; host: string }) {
  const registry = new Registry();
  registerRpcServerMetrics(registry);
  collectDefaultMetrics({ register: registry, prefix: `funil_${opts.name}_` });
  const server = http.createServer((req, res) => {
    if (req.method !== "GET" || req.url?.split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: GET /metrics\n");
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
      () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics failed\n"),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : opts.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
