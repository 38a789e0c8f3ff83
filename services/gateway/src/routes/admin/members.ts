import { MemberSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import { createMemberBody, patchMemberBody, z } from "@funil/schemas";
import type { GatewayContext } from "../../context.js";
import { writeOptions } from "../../origin.js";
import { member } from "../../schemas/responses.js";
import { type AdminApp, errors, mustWorkspace, wsParam } from "./common.js";

/** The members of a workspace, kept by crm: added, renamed, given another role, (de)activated. */
export function memberRoutes(app: AdminApp, ctx: GatewayContext) {
  app.post(
    "/workspaces/:ws/members",
    {
      schema: {
        tags: ["admin"],
        summary: "Add a member to a workspace",
        params: wsParam,
        body: createMemberBody,
        response: { 201: member, ...errors },
      },
    },
    async (req, reply) => {
      await mustWorkspace(ctx, req.params.ws);
      const res = await ctx.crm.members.createMember(
        { workspaceId: req.params.ws, ...req.body },
        writeOptions(req),
      );
      return reply.code(201).send(toApiJson(MemberSchema, res.member!));
    },
  );

  app.patch(
    "/workspaces/:ws/members/:id",
    {
      schema: {
        tags: ["admin"],
        summary: "Rename, change the role of, or (de)activate a member",
        params: z.strictObject({ ws: z.string().min(1).max(100), id: z.string().min(1).max(100) }),
        body: patchMemberBody,
        response: { 200: member, ...errors },
      },
    },
    async (req) => {
      await mustWorkspace(ctx, req.params.ws);
      const res = await ctx.crm.members.updateMember(
        {
          workspaceId: req.params.ws,
          id: req.params.id,
          ...req.body,
        },
        writeOptions(req),
      );
      return toApiJson(MemberSchema, res.member!);
    },
  );
}
