import type { DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import {
  type Client,
  Code,
  ConnectError,
  createClient,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { callsOutsideTransactions, checkingTransactions } from "@funil/db";
import { tracingOn } from "@funil/telemetry";
import { type Lookup, systemLookup } from "./balancer.js";
import { MAX_MESSAGE_BYTES } from "./errors.js";
import { traceCalls } from "./tracing.js";
import { createUnaryTransport } from "./unary-transport.js";

export type { Lookup } from "./balancer.js";
export { type AddressStat, rpcAddressStats, rpcClientStats } from "./unary-transport.js";

/**
 * Retries a call that could not reach the service, but only for methods
 * declared free of side effects: a write is sent again only by the transport,
 * and only when it certainly never ran.
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

/** How a client finds and watches the copies of its service. */
export interface RpcOptions {
  /** How often a host name in the base URL is looked up again (ms; RPC_RESOLVE_MS). */
  resolveMs?: number;
  /** HTTP/2 PING interval, and how long a PING may go unanswered before the connection is dead (ms; RPC_KEEPALIVE_MS). */
  keepaliveMs?: number;
  /** The addresses of a host name (tests give their own). */
  lookup?: Lookup;
  /** The service's name on /metrics (default: its Connect package, e.g. funil.crm.v1). */
  name?: string;
  /** The longest request sent and answer read (bytes; RPC_MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
}

/** The options of a process's clients, from its settings. */
export const rpcOptions = (config: {
  RPC_RESOLVE_MS: number;
  RPC_KEEPALIVE_MS: number;
  RPC_MAX_MESSAGE_BYTES?: number;
}): RpcOptions => ({
  resolveMs: config.RPC_RESOLVE_MS,
  keepaliveMs: config.RPC_KEEPALIVE_MS,
  maxMessageBytes: config.RPC_MAX_MESSAGE_BYTES,
});

/**
 * The transport of one service's clients: `baseUrl` is one base URL, several separated by commas, or
 * a host name that resolves to several addresses; calls are spread over them (unary-transport.ts).
 */
export function rpcTransport(
  baseUrl: string,
  timeoutMs: number,
  name: string,
  options: RpcOptions = {},
): Transport {
  return createUnaryTransport({
    baseUrl,
    defaultTimeoutMs: timeoutMs,
    // Tracing outside the retries: one CLIENT span per call, however many times it is sent.
    interceptors: [
      ...(checkingTransactions() ? [callsOutsideTransactions as Interceptor] : []),
      ...(tracingOn() ? [traceCalls, retryUnavailable] : [retryUnavailable]),
    ],
    idleTimeoutMs: 60_000,
    resolveMs: options.resolveMs ?? 5000,
    keepaliveMs: options.keepaliveMs ?? 10_000,
    lookup: options.lookup ?? systemLookup,
    name: options.name ?? name,
    maxMessageBytes: options.maxMessageBytes ?? MAX_MESSAGE_BYTES,
  });
}

/** The Connect package of a service (funil.crm.v1 of funil.crm.v1.ContactService). */
export const packageOf = (service: DescService) =>
  service.typeName.slice(0, service.typeName.lastIndexOf("."));

/**
 * A typed client with a default deadline, speaking the Connect protocol over HTTP/2 (services answer
 * gRPC too, for other clients): bench/RESULTS.md shows what each step from gRPC on connect-node's
 * transport saved. No compression: over loopback or a data-centre network, gzip of every response cost
 * more CPU than the bytes it saved.
 */
export function rpcClient<S extends DescService>(
  service: S,
  baseUrl: string,
  timeoutMs = 10_000,
  options: RpcOptions = {},
): Client<S> {
  return createClient(service, rpcTransport(baseUrl, timeoutMs, packageOf(service), options));
}
