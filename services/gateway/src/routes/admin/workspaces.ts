import { z } from "@funil/schemas";
import type { GatewayContext } from "../../context.js";
import { requestOrigin } from "../../origin.js";
import { workspace, workspaceJson } from "../../schemas/admin.js";
import { page } from "../../schemas/responses.js";
import { pageOf, wholeListQuery } from "../v1/whole-list.js";
import { type AdminApp, errors, mustWorkspace, wsParam } from "./common.js";

/** POST, GET and PATCH of workspaces: the tenants of the installation and their operator flag. */
export function workspaceRoutes(app: AdminApp, ctx: GatewayContext) {
  app.post(
    "/workspaces",
    {
      schema: {
        tags: ["admin"],
        summary: "Create a workspace (operator: may read learner usage)",
        body: z.strictObject({ name: z.string().min(1).max(200), operator: z.boolean().default(false) }),
        response: { 201: workspace, ...errors },
      },
    },
    async (req, reply) => {
      const ws = await ctx.keyStore.createWorkspace(
        req.body.name,
        req.body.operator,
        ctx.clock.now(),
        requestOrigin(req),
      );
      return reply.code(201).send(workspaceJson(ws));
    },
  );

  app.get(
    "/workspaces",
    {
      schema: {
        tags: ["admin"],
        summary: "List the workspaces",
        querystring: z.strictObject(wholeListQuery),
        response: { 200: page(workspace) },
      },
    },
    async (req) =>
      pageOf((await ctx.keyStore.listWorkspaces()).map(workspaceJson), {
        list: "workspaces",
        // The whole instance's list: the cursor is bound to the admin API rather than to a workspace.
        workspaceId: "admin",
        ...req.query,
        key: (w) => w.id,
      }),
  );

  app.patch(
    "/workspaces/:ws",
    {
      schema: {
        tags: ["admin"],
        summary: "Rename a workspace or set its operator flag",
        params: wsParam,
        body: z.strictObject({
          name: z.string().min(1).max(200).optional(),
          operator: z.boolean().optional(),
        }),
        response: { 200: workspace, ...errors },
      },
    },
    async (req) => {
      const ws = await ctx.keyStore.updateWorkspace(
        req.params.ws,
        req.body,
        ctx.clock.now(),
        requestOrigin(req),
      );
      if (!ws) await mustWorkspace(ctx, req.params.ws);
      // The operator flag is part of every cached caller of this workspace.
      await ctx.keys.invalidateWorkspace(req.params.ws);
      return workspaceJson(ws!);
    },
  );
}
