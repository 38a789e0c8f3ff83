import type { IncomingMessage } from "node:http";
import { type Logger, traceBound } from "@funil/config";
import {
  type Context,
  context,
  extractContext,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  unsampledByParent,
} from "@funil/telemetry";
import type { FastifyInstance, FastifyRequest, RouteHandlerMethod } from "fastify";
import fp from "fastify-plugin";

/** Probes and scrapes, every few seconds: a trace each would bury the requests. */
const UNTRACED = new Set(["/healthz", "/readyz", "/metrics"]);

/** A sampled request's span and the context that makes it active, kept by its raw request. */
const sampledRequests = new WeakMap<IncomingMessage, { span: Span; ctx: Context }>();
/** Marks a request whose start was decided (by the logger factory, or by onRequest): once, sampled or not. */
const DECIDED = Symbol("funil.traceDecided");
type Decided = IncomingMessage & { [DECIDED]?: true };

const pathOf = (url: string | undefined) => {
  const q = url?.indexOf("?") ?? -1;
  return q < 0 ? url : url?.slice(0, q);
};

/**
 * One SERVER span per sampled request when tracing is on (registered only then: off, no hook runs and
 * nothing is allocated per request): it continues the caller's W3C traceparent (a malformed one is
 * ignored, and a new trace begins), is named by the route template (`GET /api/v1/contacts/:id`), and
 * carries the method, route, status, workspace and request id, never a key, a secret or a body. The span
 * starts with the request's logger (Fastify's child logger factory), so that every line of the request
 * names it, the "incoming request" Fastify writes before any hook included, at no cost beyond the
 * bindings of the child Fastify makes anyway. The route's handler runs with the span active, so that the
 * RPC clients it calls carry it on (a hook pair alone cannot make a context active across the handler,
 * and an auto-instrumentation of node:http would cost every request).
 *
 * A request not sampled (its caller's decision, or the sampler's) keeps nothing: no span of its own, no
 * active context; its lines name the caller's ids when the caller sent them. Its calls send the decision
 * on with ids of their own (outgoingTraceHeaders): nothing of such a request is recorded anywhere.
 */
export const tracingPlugin = fp(async (app: FastifyInstance) => {
  /**
   * The span that names the request's log lines: its own SERVER span when it is sampled, its caller's
   * when the caller decided not to sample; undefined otherwise, and for the untraced paths.
   */
  const start = (raw: Decided, requestId: string) => {
    raw[DECIDED] = true;
    if (UNTRACED.has(pathOf(raw.url) ?? "")) return undefined;
    const parent = extractContext(raw.headers);
    // The caller's own ids name the request's lines (to find the caller's logs by); nothing else is kept.
    if (unsampledByParent(parent)) return trace.getSpan(parent);
    const span = tracer().startSpan(raw.method ?? "HTTP", { kind: SpanKind.SERVER }, parent);
    if (!span.isRecording()) return undefined;
    span.setAttributes({ "http.request.method": raw.method ?? "", "funil.request_id": requestId });
    sampledRequests.set(raw, { span, ctx: trace.setSpan(parent, span) });
    return span;
  };

  app.setChildLoggerFactory((logger, bindings, options, raw: IncomingMessage) => {
    const span = start(raw, String((bindings as { reqId?: unknown }).reqId ?? ""));
    return span ? traceBound(logger as Logger, span, bindings, options) : logger.child(bindings, options);
  });

  app.addHook("onRoute", (route) => {
    const handler = route.handler as (
      this: FastifyInstance,
      ...args: Parameters<RouteHandlerMethod>
    ) => unknown;
    route.handler = function traced(this: FastifyInstance, req, reply) {
      const ctx = sampledRequests.get(req.raw)?.ctx;
      return ctx ? context.with(ctx, handler, this, req, reply) : handler.call(this, req, reply);
    } as RouteHandlerMethod;
  });

  app.addHook("onRequest", (req, reply, done) => {
    const raw = req.raw as Decided;
    // Fastify's not-found handler makes its logger with the factory it had before this plugin.
    if (!raw[DECIDED]) {
      const started = start(raw, req.id);
      if (started) req.log = reply.log = traceBound(req.log as Logger, started);
    }
    const span = sampledRequests.get(raw)?.span;
    const route = req.routeOptions.url;
    if (span && route) {
      span.updateName(`${req.method} ${route}`);
      span.setAttribute("http.route", route);
    }
    done();
  });

  const end = (req: FastifyRequest, status: number | undefined) => {
    const entry = sampledRequests.get(req.raw);
    if (!entry) return;
    sampledRequests.delete(req.raw);
    const { span } = entry;
    if (status !== undefined) span.setAttribute("http.response.status_code", status);
    const workspaceId = req.caller?.workspaceId;
    if (workspaceId) span.setAttribute("funil.workspace_id", workspaceId);
    // A 4xx is the client's answer, not a failure of the server (the HTTP conventions' rule for SERVER spans).
    if (status === undefined || status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  app.addHook("onResponse", (req, reply, done) => {
    end(req, reply.statusCode);
    done();
  });
  app.addHook("onRequestAbort", (req, done) => {
    end(req, undefined);
    done();
  });
});
