import * as http2 from "node:http2";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { DomainError } from "@funil/errors";
import type { Logger } from "pino";
import { toConnectError } from "./errors.js";

/**
 * Server side: a DomainError becomes its ConnectError (code and details in
 * metadata); any error that is not a deliberate ConnectError is logged and
 * answered as a bare Internal (never SQL or stack traces); a lost database
 * connection is Unavailable, so callers can retry.
 */
export function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof DomainError) throw toConnectError(err);
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
