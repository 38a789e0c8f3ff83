import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { definitionRoutes } from "./definitions.js";
import { keyRoutes } from "./keys.js";
import { memberRoutes } from "./members.js";
import { adminTokenHook } from "./token.js";
import { workspaceRoutes } from "./workspaces.js";

/**
 * The admin API (docs/api/admin.md §Routes): operators of the installation, authenticated by
 * ADMIN_TOKEN. Without ADMIN_TOKEN every admin request is a 401.
 */
export const adminRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.addHook("onRequest", adminTokenHook(ctx.config.ADMIN_TOKEN));
    workspaceRoutes(app, ctx);
    keyRoutes(app, ctx);
    memberRoutes(app, ctx);
    definitionRoutes(app, ctx);
  };
