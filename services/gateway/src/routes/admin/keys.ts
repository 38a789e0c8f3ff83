import { notFound } from "@funil/errors";
import { z } from "@funil/schemas";
import type { GatewayContext } from "../../context.js";
import { generateKey, hashKey, SCOPES } from "../../keys.js";
import { requestOrigin } from "../../origin.js";
import { apiKey, keyJson } from "../../schemas/admin.js";
import { type AdminApp, errors, mustWorkspace, wsParam } from "./common.js";

const scopes = z
  .array(z.enum(SCOPES))
  .max(SCOPES.length)
  .transform((s) => [...new Set(s)]);
const keyParam = z.strictObject({ id: z.string().min(1).max(100) });

/**
 * API keys: created with their scopes (the secret shown once), rescoped, revoked. A change reaches
 * every gateway copy's key cache at once.
 */
export function keyRoutes(app: AdminApp, ctx: GatewayContext) {
  app.post(
    "/workspaces/:ws/keys",
    {
      schema: {
        tags: ["admin"],
        summary: "Create an API key; its secret is shown only in this answer",
        params: wsParam,
        body: z.strictObject({ name: z.string().min(1).max(200), scopes }),
        response: { 201: z.object({ key: apiKey, secret: z.string() }), ...errors },
      },
    },
    async (req, reply) => {
      await mustWorkspace(ctx, req.params.ws);
      const secret = generateKey();
      const key = await ctx.keyStore.createKey(
        req.params.ws,
        { name: req.body.name, scopes: req.body.scopes, prefix: secret.slice(0, 8), hash: hashKey(secret) },
        ctx.clock.now(),
        requestOrigin(req),
      );
      return reply.code(201).send({ key: keyJson(key), secret });
    },
  );

  app.patch(
    "/keys/:id",
    {
      schema: {
        tags: ["admin"],
        summary: "Replace a key's scopes (applies at once)",
        params: keyParam,
        body: z.strictObject({ scopes }),
        response: { 200: apiKey, ...errors },
      },
    },
    async (req) => {
      const key = await ctx.keyStore.setScopes(
        req.params.id,
        req.body.scopes,
        ctx.clock.now(),
        requestOrigin(req),
      );
      if (!key) throw notFound("active key");
      await ctx.keys.invalidate(key.id);
      return keyJson(key);
    },
  );

  app.delete(
    "/keys/:id",
    {
      schema: {
        tags: ["admin"],
        summary: "Revoke a key (it gets 401 at once)",
        params: keyParam,
        response: { 204: z.null().describe("revoked"), ...errors },
      },
    },
    async (req, reply) => {
      const revoked = await ctx.keyStore.revoke(req.params.id, ctx.clock.now(), requestOrigin(req));
      if (!revoked) throw notFound("key");
      await ctx.keys.invalidate(req.params.id);
      return reply.code(204).send(null);
    },
  );
}
