import compress from "@fastify/compress";
import cors from "@fastify/cors";
import { traceFields } from "@funil/config";
import { useCursorKeys } from "@funil/rpc";
import { check, type Part, refuseBadText, type z } from "@funil/schemas";
import { tracingOn } from "@funil/telemetry";
import Fastify, { type FastifyServerOptions } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { GatewayContext } from "./context.js";
import { healthChecks, readyzRoute } from "./health.js";
import { authPlugin } from "./plugins/auth.js";
import { clientErrorHandler, errorsPlugin, frameworkError } from "./plugins/errors.js";
import { httpEdgePlugin } from "./plugins/http-edge.js";
import { jsonBodyPlugin } from "./plugins/json-body.js";
import { metricsPlugin } from "./plugins/metrics.js";
import { openapiPlugin } from "./plugins/openapi.js";
import { rateLimitPlugin } from "./plugins/rate-limit.js";
import { tracingPlugin } from "./plugins/tracing.js";
import { refuseUndecodableQuery } from "./query-encoding.js";
import { adminRoutes } from "./routes/admin/index.js";
import { appointmentRoutes } from "./routes/v1/appointments.js";
import { auditRoutes } from "./routes/v1/audit.js";
import { calendarRoutes } from "./routes/v1/calendars.js";
import { contactRoutes } from "./routes/v1/contacts.js";
import { customFieldRoutes } from "./routes/v1/custom-fields.js";
import { eventRoutes } from "./routes/v1/events.js";
import { funnelRoutes } from "./routes/v1/funnel.js";
import { interactionRoutes } from "./routes/v1/interactions.js";
import { memberRoutes } from "./routes/v1/members.js";
import { noteRoutes } from "./routes/v1/notes.js";
import { opportunityRoutes } from "./routes/v1/opportunities.js";
import { pipelineRoutes } from "./routes/v1/pipelines.js";
import { platformUserRoutes } from "./routes/v1/platform-users.js";
import { taskRoutes } from "./routes/v1/tasks.js";
import { webhookDeliveryRoutes } from "./routes/v1/webhook-deliveries.js";
import { webhookRoutes } from "./routes/v1/webhooks.js";
import { serviceMetrics } from "./service-metrics.js";

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const PARTS: Record<string, Part> = {
  body: "body",
  querystring: "query",
  params: "path",
  headers: "headers",
};

declare module "fastify" {
  interface FastifyInstance {
    /** The first step of a graceful stop: not ready, and every answer closes its connection. */
    beginStop(): void;
  }
}

/** The gateway as a Fastify app: server.ts starts and stops it, tests build it directly. */
export async function buildApp(ctx: GatewayContext, options: FastifyServerOptions = {}) {
  const app = newFastify(ctx, options);
  // First, so that its onRoute hook sees every route and its onRequest runs before the others.
  if (tracingOn()) await app.register(tracingPlugin);
  // The short lists' cursors are signed here, with the keys the services sign theirs with.
  useCursorKeys(ctx.config.CURSOR_KEYS, (message) => app.log.warn(message));
  requestRules(app);
  const stopping = gracefulStop(app);

  await app.register(errorsPlugin);
  await app.register(jsonBodyPlugin);
  await app.register(httpEdgePlugin);
  const health = healthChecks(ctx);
  await app.register(metricsPlugin, { register: serviceMetrics(health) });
  // Browsers may call the API only from the origins the operator lists (none by default).
  if (ctx.config.CORS_ORIGINS.length > 0)
    await app.register(cors, {
      origin: ctx.config.CORS_ORIGINS.includes("*") ? "*" : ctx.config.CORS_ORIGINS,
      methods: ["GET", "HEAD", "POST", "PATCH", "DELETE"],
      allowedHeaders: ["authorization", "content-type", "idempotency-key", "x-request-id"],
      exposedHeaders: [
        "x-request-id",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "retry-after",
        "idempotent-replayed",
      ],
      maxAge: 600,
    });
  // Only when the client asks (accept-encoding) and the answer is worth it: small JSON gains nothing.
  await app.register(compress, { threshold: 1024, encodings: ["br", "gzip", "deflate"] });
  await app.register(openapiPlugin);

  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  readyzRoute(app, health, stopping);

  await app.register(
    async (v1) => {
      await v1.register(authPlugin, { keys: ctx.keys });
      await v1.register(rateLimitPlugin, {
        redis: ctx.redis,
        prefix: `funil:${ctx.config.FUNIL_ENV ?? "default"}:rl:`,
        max: ctx.config.RATE_LIMIT_MAX,
        windowMs: ctx.config.RATE_LIMIT_WINDOW_MS,
      });
      await v1.register(contactRoutes(ctx));
      await v1.register(opportunityRoutes(ctx));
      await v1.register(pipelineRoutes(ctx));
      await v1.register(funnelRoutes(ctx));
      await v1.register(taskRoutes(ctx));
      await v1.register(noteRoutes(ctx));
      await v1.register(interactionRoutes(ctx));
      await v1.register(customFieldRoutes(ctx));
      await v1.register(memberRoutes(ctx));
      await v1.register(calendarRoutes(ctx));
      await v1.register(appointmentRoutes(ctx));
      await v1.register(webhookRoutes(ctx));
      await v1.register(webhookDeliveryRoutes(ctx));
      await v1.register(eventRoutes(ctx));
      await v1.register(auditRoutes(ctx));
      await v1.register(platformUserRoutes(ctx));
    },
    { prefix: "/api/v1" },
  );
  await app.register(adminRoutes(ctx), { prefix: "/admin/v1" });
  return app;
}

/** Fastify with the gateway's server options: request ids, limits, and which errors stay its own. */
function newFastify(ctx: GatewayContext, options: FastifyServerOptions) {
  return Fastify({
    logger: {
      level: ctx.config.LOG_LEVEL,
      redact: ["req.headers.authorization"],
      // Tracing off, no mixin: nothing runs per line.
      ...(tracingOn() ? { mixin: traceFields } : {}),
    },
    bodyLimit: 1024 * 1024,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    },
    forceCloseConnections: "idle",
    // A request that still arrives while the gateway stops (on a connection opened before) is served like
    // any other, answered with `connection: close`: Fastify's own 503 would be neither needed nor ours.
    return503OnClosing: false,
    // Long ids reach the route's own validation (a clear 400) instead of the router's bare 414.
    routerOptions: { maxParamLength: 2000 },
    frameworkErrors: frameworkError,
    clientErrorHandler,
    // A request without Host is refused by httpEdgePlugin, with the error body, rather than by Node.
    http: { requireHostHeader: false },
    ...options,
  }).withTypeProvider<ZodTypeProvider>();
}

type GatewayApp = ReturnType<typeof newFastify>;

/** What every request goes through: the shared schemas, the request id, no text that cannot be kept. */
function requestRules(app: GatewayApp) {
  // The request rules are the shared schemas of @funil/schemas, applied by the same check() the services
  // use, so HTTP and gRPC answer the same validation_failed details.
  app.setValidatorCompiler(({ schema, httpPart }) => (data) => {
    try {
      return { value: check(schema as z.ZodType, data, PARTS[httpPart ?? ""] ?? "body") };
    } catch (error) {
      return { error: error as Error };
    }
  });
  // Response schemas document the API (OpenAPI); answers are built by toApiJson, which already gives
  // them their exact shape, so they are not parsed again on the way out: that parse cost more than the
  // whole database round trip of a list page.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // Every answer carries its request id. These small hooks take a callback rather than return a promise:
  // each async hook costs every request a promise and a turn of Fastify's hook runner.
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    done();
  });
  // A NUL character or a lone surrogate cannot be kept as sent: refused up front, for every route, as the
  // services do.
  app.addHook("preValidation", (req, _reply, done) => {
    try {
      refuseUndecodableQuery(req.url);
      refuseBadText(req.params, "path");
      refuseBadText(req.query, "query");
      refuseBadText(req.body, "body");
    } catch (err) {
      return done(err as Error);
    }
    done();
  });
}

/**
 * Graceful shutdown. beginStop() (server.ts, at SIGTERM) makes /readyz answer 503 and every answer
 * close its connection, so that a load balancer following readiness sends new requests elsewhere
 * while this copy still serves; close() then lets requests in flight finish and closes the keep-alive
 * connections instead of holding close() open until the client lets go of them. Returns whether the
 * app is stopping.
 */
function gracefulStop(app: GatewayApp) {
  let stopping = false;
  let draining: NodeJS.Timeout | undefined;
  app.decorate("beginStop", () => {
    stopping = true;
  });
  app.addHook("preClose", async () => {
    stopping = true;
    draining = setInterval(() => app.server.closeIdleConnections(), 50);
  });
  app.addHook("onSend", (_req, reply, payload, done) => {
    if (stopping) reply.header("connection", "close");
    done(null, payload);
  });
  app.addHook("onClose", async () => clearInterval(draining));
  return () => stopping;
}
