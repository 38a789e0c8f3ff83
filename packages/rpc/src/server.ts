import * as http2 from "node:http2";
import { ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { apiError, isUnavailable } from "./errors.js";

/**
 * Server side: any error that is not a deliberate ConnectError is answered
 * with a stable code and nothing else (never SQL or stack traces): a lost
 * store connection is `unavailable` (one warn line, no stack: an outage, not
 * a bug, and callers retry), anything else is `internal`, logged with its stack.
 */
function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof ConnectError) throw err;
      if (isUnavailable(err)) {
        log.warn({ method: req.method.name, cause: causeOf(err) }, "dependency unavailable");
        throw apiError("unavailable", "dependency unavailable");
      }
      log.error({ err, method: req.method.name }, "unhandled error");
      throw apiError("internal", "internal error");
    }
  };
}

/** A short, stack-free description of a failure, for warn lines. */
export function causeOf(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" || typeof e?.code === "number" ? `${e.code}: ` : "";
  return `${code}${typeof e?.message === "string" ? e.message : String(err)}`.slice(0, 300);
}

/**
 * Serves Connect, gRPC and gRPC-web on cleartext HTTP/2 and returns a close()
 * that stops accepting, lets in-flight calls finish, then closes sessions.
 */
export async function startRpcServer(opts: {
  port: number;
  host?: string;
  routes: (router: ConnectRouter) => void;
  log: Logger;
}): Promise<{ port: number; close(): Promise<void> }> {
  const server = http2.createServer(
    connectNodeAdapter({ routes: opts.routes, interceptors: [errorInterceptor(opts.log)] }),
  );
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : opts.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.close();
        setTimeout(() => {
          for (const s of sessions) s.destroy();
        }, 5000).unref();
      }),
  };
}
