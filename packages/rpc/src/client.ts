import type { DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createUnaryTransport } from "./unary-transport.js";

export { rpcClientStats } from "./unary-transport.js";

/**
 * Retries a call that could not reach the service, but only for methods
 * declared free of side effects: a write is never sent twice by the transport.
 */
const retryUnavailable: Interceptor = (next) => async (req) => {
  const safe = req.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await next(req);
    } catch (err) {
      const retryable = safe && err instanceof ConnectError && err.code === Code.Unavailable && attempt < 2;
      if (!retryable) throw err;
      await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  }
};

/**
 * A typed client with a default deadline, speaking the Connect protocol over HTTP/2 (services answer
 * gRPC too, for other clients): bench/RESULTS.md shows what each step from gRPC on connect-node's
 * transport saved. No compression: over loopback or a data-centre network, gzip of every response cost
 * more CPU than the bytes it saved.
 */
export function rpcClient<S extends DescService>(service: S, baseUrl: string, timeoutMs = 10_000): Client<S> {
  const transport = createUnaryTransport({
    baseUrl,
    defaultTimeoutMs: timeoutMs,
    interceptors: [retryUnavailable],
    idleTimeoutMs: 60_000,
  });
  return createClient(service, transport);
}
