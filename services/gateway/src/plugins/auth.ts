import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { Caller, KeyResolver } from "../key-cache.js";
import { errorBody } from "./errors.js";

declare module "fastify" {
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyContextConfig {
    /** The route needs one of these scopes (docs/api/conventions.md §Scopes per route). Every /api/v1 route declares it. */
    scopes?: string[];
    /** Learner routes: platform.read AND an operator workspace, else 403 forbidden_platform. */
    platform?: boolean;
  }
}

/**
 * Every Authorization header of the request as it arrived. Node keeps only the first of repeated
 * Authorization headers in req.headers, which would let the first of two keys win: read the raw list.
 */
export function authorizationHeaders(raw: string[]): string[] {
  const found: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === "authorization") found.push(raw[i + 1]!);
  return found;
}

/** The workspace id always comes from the key, never from the request. */
export const authPlugin = fp(async (app: FastifyInstance, opts: { keys: KeyResolver }) => {
  app.decorateRequest("caller", null as unknown as Caller);

  app.addHook("onRoute", (route) => {
    if (!route.config?.scopes?.length && !route.config?.platform)
      throw new Error(`route ${route.method} ${route.url} declares no scope`);
  });

  app.addHook("onRequest", async (req: FastifyRequest, reply) => {
    const headers = authorizationHeaders(req.raw.rawHeaders);
    const match = headers.length === 1 ? /^Bearer\s+(\S+)\s*$/i.exec(headers[0]!) : null;
    const caller = match ? await opts.keys.resolve(match[1]!) : undefined;
    if (!caller) {
      reply.header("www-authenticate", 'Bearer realm="funil"');
      return reply
        .code(401)
        .send(
          errorBody(
            "unauthorized",
            headers.length > 1
              ? "send one Authorization header: credentials sent twice are never chosen between"
              : "missing, malformed, unknown or revoked API key",
          ),
        );
    }
    req.caller = caller;
  });

  // Scopes are checked after onRequest, where the rate limit counts the request: a request refused
  // for its scope is still a request (so is one refused by validation, which runs later still).
  app.addHook("preParsing", async (req: FastifyRequest, reply) => {
    const caller = req.caller;
    const config = req.routeOptions.config;
    if (config.platform) {
      if (!caller.scopes.has("platform.read") || !caller.operator)
        return reply
          .code(403)
          .send(
            errorBody(
              "forbidden_platform",
              "learner usage is only for the platform operator's key with platform.read",
            ),
          );
      return;
    }
    const needed = config.scopes ?? [];
    if (!needed.some((s) => caller.scopes.has(s))) {
      return reply.code(403).send(
        errorBody(
          "missing_scope",
          `this route needs the scope ${needed.join(" or ")}`,
          needed.map((s) => ({ path: "scope", message: s })),
        ),
      );
    }
  });
});
