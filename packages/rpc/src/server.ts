import * as http2 from "node:http2";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { unaryFastPath } from "./unary-handler.js";

/**
 * Server side: any error that is not a deliberate ConnectError is logged and
 * answered as a bare Internal (never SQL or stack traces); a lost database
 * connection is Unavailable, so callers can retry.
 */
function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof ConnectError) throw err;
      const code = (err as { code?: string }).code;
      if (
        code === "ECONNREFUSED" ||
        code === "CONNECTION_CLOSED" ||
        code === "CONNECT_TIMEOUT" ||
        code === "57P01"
      ) {
        log.warn({ err, method: req.method.name }, "dependency unavailable");
        throw new ConnectError("dependency unavailable", Code.Unavailable);
      }
      log.error({ err, method: req.method.name }, "unhandled error");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}

/**
 * Serves Connect, gRPC and gRPC-web on cleartext HTTP/2 (the binary Connect unary calls of the services'
 * own clients through the lean path of unary-handler.ts, the rest through connect-node) and returns a close()
 * that stops accepting, lets in-flight calls finish, then closes sessions.
 */
export async function startRpcServer(opts: {
  port: number;
  host?: string;
  routes: (router: ConnectRouter) => void;
  log: Logger;
}): Promise<{ port: number; close(): Promise<void> }> {
  const interceptors = [errorInterceptor(opts.log)];
  const fast = unaryFastPath(interceptors);
  const adapter = connectNodeAdapter({ routes: (router) => opts.routes(fast.record(router)), interceptors });
  const server = http2.createServer((req, res) => {
    if (!fast.handle(req, res)) adapter(req, res);
  });
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
