import type { DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

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

/** A typed client over gRPC (HTTP/2) with a default deadline. */
export function rpcClient<S extends DescService>(service: S, baseUrl: string, timeoutMs = 10_000): Client<S> {
  const transport = createGrpcTransport({
    baseUrl,
    defaultTimeoutMs: timeoutMs,
    interceptors: [retryUnavailable],
    idleConnectionTimeoutMs: 60_000,
    // Services talk over loopback or a data-centre network: gzip of every response cost more CPU than
    // the bytes it saved (it was the top entry of a list page's profile).
    acceptCompression: [],
  });
  return createClient(service, transport);
}
