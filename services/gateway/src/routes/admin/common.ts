import { notFound } from "@funil/errors";
import { z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses } from "../../schemas/common.js";

/** The Fastify instance the admin routes are registered on (zod schemas). */
export type AdminApp = Parameters<FastifyPluginAsyncZod>[0];

export const wsParam = z.strictObject({ ws: z.string().min(1).max(100) });
export const errors = errorResponses(400, 401, 404, 409, 422);

/** The workspace of a path, or 404 not_found. */
export async function mustWorkspace(ctx: GatewayContext, id: string) {
  const ws = await ctx.keyStore.getWorkspace(id);
  if (!ws) throw notFound("workspace");
  return ws;
}
