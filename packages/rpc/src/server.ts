import * as http2 from "node:http2";
import { ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { BatchService, Health } from "@funil/contracts";
import { DomainError } from "@funil/errors";
import { tracingOn } from "@funil/telemetry";
import type { Logger } from "pino";
import { causeOf, isUnavailable, MAX_MESSAGE_BYTES, toConnectError } from "./errors.js";
import { flowSettings, widenSessionWindow } from "./flow.js";
import { grpcHealthService, HealthService, type HealthSources, healthService } from "./health.js";
import { measureCalls } from "./metrics.js";
import { traceHandlers } from "./tracing.js";
import { unaryFastPath } from "./unary-handler.js";

/**
 * Server side: a DomainError becomes its ConnectError (code and details in
 * metadata); any other error that is not a deliberate ConnectError is
 * answered with a stable code and nothing else (never SQL or stack traces): a
 * lost store connection is `unavailable` (one warn line, no stack: an outage,
 * not a bug, and callers retry), anything else is `internal`, logged with its
 * stack.
 */
export function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof DomainError) throw toConnectError(err);
      if (err instanceof ConnectError) throw err;
      if (isUnavailable(err)) {
        log.warn({ method: req.method.name, cause: causeOf(err) }, "dependency unavailable");
        throw toConnectError(new DomainError("unavailable", "dependency unavailable"));
      }
      log.error({ err, method: req.method.name }, "unhandled error");
      throw toConnectError(new DomainError("internal", "internal error"));
    }
  };
}

/** The default of RPC_MAX_CONNECTION_AGE_MS. */
export const MAX_CONNECTION_AGE_MS = 300_000;

/**
 * Serves Connect, gRPC and gRPC-web (and the HealthService when given its sources) on cleartext HTTP/2
 * (the binary Connect unary calls of the services' own clients through the lean path of
 * unary-handler.ts, the rest through connect-node), with the BatchService that answers several calls of
 * one client in one stream and the standard grpc.health.v1 Health, and returns a close() that stops
 * accepting, lets in-flight calls finish, then closes sessions.
 */
export async function startRpcServer(opts: {
  port: number;
  host?: string;
  routes: (router: ConnectRouter) => void;
  log: Logger;
  /** What the service's HealthService reports (every service serves one). */
  health?: HealthSources;
  /**
   * A connection older than this (plus up to a tenth more, so that a client's connections to the copies
   * do not all end at once) is ended gracefully (RPC_MAX_CONNECTION_AGE_MS).
   */
  maxConnectionAgeMs?: number;
  /**
   * The largest message read or written (RPC_MAX_MESSAGE_BYTES): a request over it is answered
   * resource_exhausted without being held, a response over it replaced by that error.
   */
  maxMessageBytes?: number;
}): Promise<{ port: number; stopping(): void; close(): Promise<void> }> {
  const maxBytes = opts.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  // Tracing first, so that its span sees the error the caller gets.
  const interceptors = tracingOn()
    ? [traceHandlers, errorInterceptor(opts.log)]
    : [errorInterceptor(opts.log)];
  const fast = unaryFastPath(interceptors, { maxMessageBytes: maxBytes });
  let stopping = false;
  const adapter = connectNodeAdapter({
    routes: (router) => serviceRoutes(fast.record(router), opts, fast.batch, () => stopping),
    // The lean path counts its calls itself.
    interceptors: [measureCalls, ...interceptors],
    readMaxBytes: maxBytes,
    writeMaxBytes: maxBytes,
  });
  const server = http2.createServer({ settings: flowSettings }, (req, res) => {
    if (!fast.handle(req, res)) adapter(req, res);
  });
  server.on("session", widenSessionWindow);
  const sessions = agedSessions(server, opts.maxConnectionAgeMs ?? MAX_CONNECTION_AGE_MS, fast.drainChannels);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : opts.port,
    stopping() {
      stopping = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        server.close(() => resolve());
        // Batch channels stay open while their client lives: each ends once its frames are answered.
        fast.drainChannels();
        for (const s of sessions) s.close();
        setTimeout(() => {
          for (const s of sessions) s.destroy();
        }, 5000).unref();
      }),
  };
}

/** The service's own routes, its HealthService, the BatchService and grpc.health.v1. */
function serviceRoutes(
  router: ConnectRouter,
  opts: { routes: (router: ConnectRouter) => void; health?: HealthSources },
  batch: ReturnType<typeof unaryFastPath>["batch"],
  stopping: () => boolean,
) {
  const health = opts.health;
  const names = new Set<string>(health ? [health.service] : []);
  opts.routes(router);
  if (health) router.service(HealthService, healthService(health));
  router.service(BatchService, batch);
  router.service(Health, grpcHealthService({ names: () => names, sql: health?.sql, stopping }));
  for (const h of router.handlers) names.add(h.service.typeName);
}

/**
 * The server's open sessions, each ended by a GOAWAY once older than `maxAge` (plus up to a tenth more):
 * the calls the session carries finish and its batch channel answers the frames it read (a client sends
 * what came later again, knowing it never ran); the client opens a new connection, which its balancer
 * may give to a copy that started since.
 */
function agedSessions(
  server: http2.Http2Server,
  maxAge: number,
  drainChannels: (s: http2.ServerHttp2Session) => void,
): Set<http2.ServerHttp2Session> {
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    const aged = setTimeout(
      () => {
        s.close();
        drainChannels(s);
      },
      maxAge * (1 + Math.random() / 10),
    ).unref();
    s.on("close", () => {
      sessions.delete(s);
      clearTimeout(aged);
    });
  });
  return sessions;
}
