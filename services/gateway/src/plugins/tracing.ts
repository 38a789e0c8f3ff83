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
} from "@funil/telemetry";
import type { FastifyInstance, FastifyRequest, RouteHandlerMethod } from "fastify";
import fp from "fastify-plugin";

/** Probes and scrapes, every few seconds: a trace each would bury the requests. */
const UNTRACED = new Set(["/healthz", "/readyz", "/metrics"]);

/** Where a request keeps its span and the context that makes it active. */
const TRACED = Symbol("funil.traced");
type Traced = IncomingMessage & { [TRACED]?: { span: Span; ctx: Context } };

const pathOf = (url: string | undefined) => {
  const q = url?.indexOf("?") ?? -1;
  return q < 0 ? url : url?.slice(0, q);
};

/**
 * One SERVER span per request when tracing is on (registered only then: off, no hook runs and nothing is
 * allocated per request): it continues the caller's W3C traceparent (a malformed one is ignored, and a
 * new trace begins), is named by the route template (`GET /api/v1/contacts/:id`), and carries the method,
 * route, status, workspace and request id, never a key, a secret or a body. The span starts with the
 * request's logger (Fastify's child logger factory), so that every line of the request names it, the
 * "incoming request" Fastify writes before any hook included, at no cost beyond the bindings of the
 * child Fastify makes anyway. The route's handler runs with the span active, so that the RPC clients
 * it calls carry it on (a hook pair alone cannot make a context active across the handler, and an
 * auto-instrumentation of node:http would cost every request). A span not recorded (not sampled) gets
 * no attributes: only its context travels.
 */
export const tracingPlugin = fp(async (app: FastifyInstance) => {
  /** The request's span, kept on it; undefined for the untraced paths. */
  const start = (raw: Traced, requestId: string) => {
    if (UNTRACED.has(pathOf(raw.url) ?? "")) return undefined;
    const parent = extractContext(raw.headers);
    const span = tracer().startSpan(raw.method ?? "HTTP", { kind: SpanKind.SERVER }, parent);
    if (span.isRecording())
      span.setAttributes({ "http.request.method": raw.method ?? "", "funil.request_id": requestId });
    raw[TRACED] = { span, ctx: trace.setSpan(parent, span) };
    return span;
  };

  app.setChildLoggerFactory((logger, bindings, options, raw: Traced) => {
    const span = start(raw, String((bindings as { reqId?: unknown }).reqId ?? ""));
    return span ? traceBound(logger as Logger, span, bindings, options) : logger.child(bindings, options);
  });

  app.addHook("onRoute", (route) => {
    const handler = route.handler as (
      this: FastifyInstance,
      ...args: Parameters<RouteHandlerMethod>
    ) => unknown;
    route.handler = function traced(this: FastifyInstance, req, reply) {
      const ctx = (req.raw as Traced)[TRACED]?.ctx;
      return ctx ? context.with(ctx, handler, this, req, reply) : handler.call(this, req, reply);
    } as RouteHandlerMethod;
  });

  app.addHook("onRequest", (req, reply, done) => {
    const raw = req.raw as Traced;
    // Fastify's not-found handler makes its logger with the factory it had before this plugin.
    if (!raw[TRACED]) {
      const started = start(raw, req.id);
      if (started) req.log = reply.log = traceBound(req.log as Logger, started);
    }
    const span = raw[TRACED]?.span;
    const route = req.routeOptions.url;
    if (span?.isRecording() && route) {
      span.updateName(`${req.method} ${route}`);
      span.setAttribute("http.route", route);
    }
    done();
  });

  const end = (req: FastifyRequest, status: number | undefined) => {
    const raw = req.raw as Traced;
    const entry = raw[TRACED];
    if (!entry) return;
    raw[TRACED] = undefined;
    const { span } = entry;
    if (!span.isRecording()) return;
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
