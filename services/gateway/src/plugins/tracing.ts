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

/**
 * One SERVER span per request when tracing is on (registered only then: off, no hook runs and nothing is
 * allocated per request): it continues the caller's W3C traceparent (a malformed one is ignored, and a
 * new trace begins), is named by the route template (`GET /api/v1/contacts/:id`), and carries the method,
 * route, status, workspace and request id, never a key, a secret or a body. The route's handler runs with
 * the span active, so that the RPC clients it calls carry it on (a hook pair alone cannot make a context
 * active across the handler, and an auto-instrumentation of node:http would cost every request).
 */
export const tracingPlugin = fp(async (app: FastifyInstance) => {
  const active = new WeakMap<FastifyRequest, { span: Span; ctx: Context }>();

  app.addHook("onRoute", (route) => {
    const handler = route.handler as (
      this: FastifyInstance,
      ...args: Parameters<RouteHandlerMethod>
    ) => unknown;
    route.handler = function traced(this: FastifyInstance, req, reply) {
      const ctx = active.get(req)?.ctx;
      return ctx ? context.with(ctx, handler, this, req, reply) : handler.call(this, req, reply);
    } as RouteHandlerMethod;
  });

  app.addHook("onRequest", (req, reply, done) => {
    const route = req.routeOptions.url;
    if (route !== undefined && UNTRACED.has(route)) return done();
    const parent = extractContext(req.headers);
    const span = tracer().startSpan(
      route ? `${req.method} ${route}` : req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": req.method,
          ...(route ? { "http.route": route } : {}),
          "funil.request_id": req.id,
        },
      },
      parent,
    );
    active.set(req, { span, ctx: trace.setSpan(parent, span) });
    // Every line of the request names its span, those Fastify writes outside the handler too.
    const log = traceBound(req.log as Logger, span);
    req.log = log;
    reply.log = log;
    done();
  });

  const end = (req: FastifyRequest, status: number | undefined) => {
    const entry = active.get(req);
    if (!entry) return;
    active.delete(req);
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
