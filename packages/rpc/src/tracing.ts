import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import {
  context,
  extractContext,
  injectContext,
  type Span,
  SpanKind,
  SpanStatusCode,
  sampled,
  trace,
  tracer,
} from "@funil/telemetry";

type Request = Parameters<Parameters<Interceptor>[0]>[0];

/** The RPC attributes of the semantic conventions, and the span's name: `funil.crm.v1.ContactService/Get`. */
const described = (req: Request) => ({
  name: `${req.service.typeName}/${req.method.name}`,
  attributes: {
    "rpc.system": "connect_rpc",
    "rpc.service": req.service.typeName,
    "rpc.method": req.method.name,
  },
});

/** A call that failed: the span is an error, with the Connect code (`not_found`) as the conventions name it. */
function failed(span: Span, err: unknown) {
  const error = ConnectError.from(err);
  span.setAttribute("rpc.connect_rpc.error_code", codeToString(error.code));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.rawMessage });
}

/**
 * The client side, added to a transport only when tracing is on: every call carries the caller's context
 * as a W3C traceparent header, which the transport sends with the call alone or inside its batch frame
 * (each call of a batch has headers of its own). In a sampled trace the call gets a CLIENT span (the
 * parent of the service's); in an unsampled one only the context travels, so that the service keeps the
 * caller's decision and nothing is recorded.
 */
export const traceCalls: Interceptor = (next) => async (req) => {
  const active = context.active();
  if (!sampled(active)) {
    injectContext(active, req.header);
    return next(req);
  }
  const { name, attributes } = described(req);
  const span = tracer().startSpan(name, { kind: SpanKind.CLIENT, attributes }, active);
  injectContext(trace.setSpan(active, span), req.header);
  try {
    return await next(req);
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
};

/** Health checks, polled every few seconds by the gateway and orchestrators: a trace each would bury the rest. */
const UNTRACED = new Set(["funil.health.v1.HealthService", "grpc.health.v1.Health"]);

/**
 * The server side, first of the server's interceptors when tracing is on: one SERVER span per method call,
 * child of the traceparent the call carries (a batch's calls each of their own), active while the
 * implementation runs; a call that fails marks it as an error.
 */
export const traceHandlers: Interceptor = (next) => async (req) => {
  if (UNTRACED.has(req.service.typeName)) return next(req);
  const parent = extractContext(req.header);
  const { name, attributes } = described(req);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), next, undefined, req);
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
};
