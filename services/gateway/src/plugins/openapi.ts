import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import { asyncapiDocument } from "../asyncapi.js";
import { DOCS_CSP, renderDocsPage } from "../docs/page.js";
import { openapiWebhooks } from "../events/catalog.js";

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked as plain JSON
type Json = any;

const BODY_METHODS = new Set(["post", "put", "patch", "delete"]);

const header = (description: string, type: "string" | "integer") => ({ description, schema: { type } });
const HEADERS = {
  RequestId: header(
    "the request's id: the client's x-request-id when it sent a valid one, else generated",
    "string",
  ),
  RateLimitLimit: header("requests allowed per key in the window", "integer"),
  RateLimitRemaining: header("requests left in the current window", "integer"),
  RateLimitReset: header("seconds until the window resets", "integer"),
  RetryAfter: header("seconds to wait before retrying", "integer"),
};

/** Answers the gateway gives on any route, beside the ones each route documents (docs/api/conventions.md §Errors). */
const COMMON: Array<{
  status: string;
  description: string;
  when: (path: string, method: string) => boolean;
}> = [
  {
    status: "400",
    description:
      "validation_failed: a bad value, a NUL character, JSON nested too deep, an HTTP/1.1 request without " +
      "Host. A malformed header (the connection then closes) or a path that does not decode is refused " +
      "before the key is read: x-request-id, but no x-ratelimit-*",
    when: () => true,
  },
  { status: "401", description: "unauthorized", when: () => true },
  { status: "413", description: "payload_too_large: a body over 1 MiB", when: (_, m) => BODY_METHODS.has(m) },
  {
    status: "415",
    description: "unsupported_media_type: a body that is not application/json",
    when: (_, m) => BODY_METHODS.has(m),
  },
  {
    status: "417",
    description: "expectation_failed: an Expect header other than 100-continue",
    when: () => true,
  },
  {
    status: "429",
    description: "rate_limited: over the key's rate limit",
    when: (p) => p.startsWith("/api/"),
  },
  {
    status: "431",
    description:
      "headers_too_large: request line and headers over 16 KB; refused before the key is read: " +
      "x-request-id but no x-ratelimit-* (the connection then closes)",
    when: () => true,
  },
  {
    status: "500",
    description: "internal: a bug, never an outage; it does not show its cause",
    when: () => true,
  },
  { status: "503", description: "unavailable: a backing service is down; retry", when: () => true },
];

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * The admin API's operationIds, from method and path: `post /admin/v1/workspaces` → `postAdminWorkspaces`.
 * The public API's are named by each route (see publicOperationId).
 */
export function operationId(method: string, path: string): string {
  const words = path
    .replace(/^\/api\/v1/, "")
    .replace(/^\/admin\/v1/, "/admin")
    .split("/")
    .filter(Boolean)
    .map((part) => (part.startsWith("{") ? `by-${part.slice(1, -1)}` : part))
    .flatMap((part) => part.split(/[^A-Za-z0-9]+/))
    .filter(Boolean);
  return [method, ...words].map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join("");
}

const REF = /"#\/components\/schemas\/([^"]+)"/g;

/**
 * Drops the component schemas nothing refers to: the zod provider writes an input and an output copy
 * of every named schema, and only one of them is used by an operation.
 */
function pruneSchemas(doc: Json) {
  const schemas = doc.components?.schemas ?? {};
  const used = new Set<string>();
  const queue = [...JSON.stringify([doc.paths, doc.webhooks]).matchAll(REF)].map((m) => m[1]!);
  for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
    if (used.has(name)) continue;
    used.add(name);
    queue.push(...[...JSON.stringify(schemas[name] ?? {}).matchAll(REF)].map((m) => m[1]!));
  }
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
}

/**
 * A public operation's id is the method of @funil/client that calls it, so each route names its own
 * (`listContacts`, `getContact`, `archiveContact`: packages/client/README.md §Method names); one made
 * from the path would read `postContactsByIdArchive`. A route without one stops the document.
 */
function publicOperationId(method: string, path: string): never {
  throw new Error(`${method.toUpperCase()} ${path} has no operationId: name it in the route's schema`);
}

/**
 * Completes the generated document in one place, so no route has to repeat it: every admin operation gets
 * an operationId, the error answers every route can give (413, 415, 429, 500, 503…), and the headers every
 * answer carries (x-request-id; x-ratelimit-* under /api/v1; retry-after on 429 and 503).
 */
export function completeDocument(doc: Json): Json {
  doc.components ??= {};
  doc.components.headers = { ...doc.components.headers, ...HEADERS };
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!op || typeof op !== "object" || !("responses" in op)) continue;
      op.operationId ??= path.startsWith("/api/")
        ? publicOperationId(method, path)
        : operationId(method, path);
      for (const common of COMMON)
        if (common.when(path, method) && !op.responses[common.status])
          op.responses[common.status] = {
            description: common.description,
            content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
          };
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (/^[45]/.test(status) && response.description === "Default Response")
          response.description = COMMON.find((c) => c.status === status)?.description ?? "error";
        response.headers = { "x-request-id": ref("RequestId"), ...response.headers };
        // A 401 and a 431 come before a key is known: no rate limit was taken, none is shown.
        if (path.startsWith("/api/") && status !== "401" && status !== "431")
          Object.assign(response.headers, {
            "x-ratelimit-limit": ref("RateLimitLimit"),
            "x-ratelimit-remaining": ref("RateLimitRemaining"),
            "x-ratelimit-reset": ref("RateLimitReset"),
          });
        if (status === "429" || status === "503") response.headers["retry-after"] = ref("RetryAfter");
      }
    }
  }
  pruneSchemas(doc);
  return doc;
}

/** The OpenAPI 3.1 document (from the zod schemas that validate requests), the AsyncAPI one and the /docs page. */
export const openapiPlugin = fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Funil API",
        version: "1.0.0",
        description:
          "Sales CRM API. /docs opens with guides: first call, keys and scopes, errors, pagination, rate limits, retries and idempotency, webhooks, events.",
        license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
      },
      servers: [{ url: "/" }],
      components: {
        securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "fnl_… API key" } },
      },
      security: [{ bearer: [] }],
      // What a webhook receiver gets: one POST per subscribable event (docs/api/webhooks.md).
      // biome-ignore lint/suspicious/noExplicitAny: the types of @fastify/swagger have no webhooks of OpenAPI 3.1
      webhooks: openapiWebhooks() as any,
    },
    transform: jsonSchemaTransform,
    transformObject: (input) => completeDocument(jsonSchemaTransformObject(input)),
  });
  // Swagger UI's assets are served from the package (validatorUrl off): it works offline too.
  await app.register(swaggerUi, { routePrefix: "/docs/explorer", uiConfig: { validatorUrl: null } });
  app.get("/api/v1/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  // The NATS subjects' AsyncAPI document (docs/api/events.md §AsyncAPI document), public like the one above.
  app.get("/api/v1/asyncapi.json", { schema: { hide: true } }, async () => asyncapiDocument());
  let page: string | undefined;
  app.get("/docs", { schema: { hide: true } }, async (_req, reply) => {
    page ??= renderDocsPage(app.swagger());
    return reply.type("text/html; charset=utf-8").header("content-security-policy", DOCS_CSP).send(page);
  });
});
