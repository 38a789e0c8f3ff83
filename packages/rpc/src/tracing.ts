import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import {
  type Context,
  context,
  extractContext,
  outgoingTraceHeaders,
  type Span,
  SpanKind,
  SpanStatusCode,
  sampled,
  trace,
  traceHeaders,
  tracer,
  unsampledByParent,
  unsampledTraceparent,
} from "@funil/telemetry";
import { addHeaders, plainHeaders } from "./headers.js";

type Request = Parameters<Parameters<Interceptor>[0]>[0];
type Next = Parameters<Interceptor>[0];

/** A call's span name: `funil.crm.v1.ContactService/GetContact`. */
const nameOf = (req: Request) => `${req.service.typeName}/${req.method.name}`;

/** The RPC attributes of the semantic conventions. */
const attributesOf = (req: Request) => ({
  "rpc.system": "connect_rpc",
  "rpc.service": req.service.typeName,
  "rpc.method": req.method.name,
});

/** A call that failed: the span is an error, with the Connect code (`not_found`) as the conventions name it. */
function failed(span: Span, err: unknown) {
  const error = ConnectError.from(err);
  span.setAttribute("rpc.connect_rpc.error_code", codeToString(error.code));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.rawMessage });
}

/** Runs the call, ending `span` when it settles (an error span when it fails). */
async function within(span: Span, call: () => ReturnType<Next>) {
  try {
    return await call();
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The client side, added to a transport only when tracing is on: every call carries the caller's context
 * as a W3C traceparent header, which the transport sends with the call alone or inside its batch frame
 * (each call of a batch has headers of its own). In a sampled trace the call gets a CLIENT span (the
 * parent of the service's); in an unsampled one only a traceparent string travels, added to the call's
 * plain headers (no span, no Headers object): the active context's, or one of fresh ids with the sampled
 * flag off when work not sampled has none active any more (outgoingTraceHeaders), so that the service
 * keeps the caller's decision and nothing is recorded.
 */
export const traceCalls: Interceptor = (next) => (req) => {
  const active = context.active();
  if (!sampled(active)) {
    const headers = outgoingTraceHeaders(active);
    if (headers) addHeaders(req, headers);
    return next(req);
  }
  const span = tracer().startSpan(
    nameOf(req),
    { kind: SpanKind.CLIENT, attributes: attributesOf(req) },
    active,
  );
  addHeaders(req, traceHeaders(trace.setSpan(active, span)) ?? {});
  return within(span, () => next(req));
};

/** Health checks, polled every few seconds by the gateway and orchestrators: a trace each would bury the rest. */
const UNTRACED = new Set(["funil.health.v1.HealthService", "grpc.health.v1.Health"]);

/**
 * The server side, first of the server's interceptors when tracing is on: one SERVER span per method call,
 * child of the traceparent the call carries (a batch's calls each of their own, read from its plain
 * headers), active while the implementation runs; a call that fails marks it as an error. A call its
 * caller did not sample gets no span at all (unsampledTraceparent reads that from the header itself,
 * unsampledByParent from a context made of another form), and one the sampler does not record is
 * only made active: what the call writes carries the decision on through its origin (the traceparent
 * it was sent, in the outbox row) and through outgoingTraceHeaders (its calls).
 */
export const traceHandlers: Interceptor = (next) => (req) => {
  if (UNTRACED.has(req.service.typeName)) return next(req);
  const headers = plainHeaders(req);
  if (unsampledTraceparent(headers.traceparent)) return next(req);
  const parent: Context = extractContext(headers);
  if (unsampledByParent(parent)) return next(req);
  // The samplers look at the trace id and the parent only: attributes are built for a recorded span alone.
  const span = tracer().startSpan(nameOf(req), { kind: SpanKind.SERVER }, parent);
  const active = trace.setSpan(parent, span);
  if (!span.isRecording()) return context.with(active, next, undefined, req);
  span.setAttributes(attributesOf(req));
  return within(span, () => context.with(active, next, undefined, req));
};
