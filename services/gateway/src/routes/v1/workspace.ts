import { type CustomField, CustomFieldSchema, type Member, MemberSchema } from "@funil/contracts";
import { toApiJson } from "@funil/rpc";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses, page } from "../../schemas/common.js";

export const customField = z
  .object({
    id: z.string(),
    entity: z.enum(["contact", "opportunity"]),
    fieldKey: z.string(),
    label: z.string(),
    type: z.enum(["text", "number", "boolean", "date", "select"]),
    options: z.array(z.string()),
    createdAt: z.string(),
  })
  .meta({ id: "CustomField" });

export const member = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    role: z.string(),
    active: z.boolean(),
    createdAt: z.string(),
  })
  .meta({ id: "Member" });

export const customFieldJson = (f: CustomField | undefined) =>
  toApiJson(CustomFieldSchema, f!) as z.infer<typeof customField>;
export const memberJson = (m: Member | undefined) => toApiJson(MemberSchema, m!) as z.infer<typeof member>;

const errors = errorResponses(400, 401, 403);

export const workspaceRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/custom-fields",
      {
        config: { scopes: ["contacts.read", "opportunities.read"] },
        schema: {
          tags: ["custom fields"],
          summary: "List the custom-field definitions (the fieldKeys accepted in customFields)",
          querystring: z.object({ entity: z.enum(["contact", "opportunity"]).optional() }),
          response: { 200: page(customField), ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.customFields.listCustomFields({
          workspaceId: req.caller.workspaceId,
          entity: req.query.entity,
        });
        return {
          data: res.data.map(customFieldJson),
          nextCursor: null,
        };
      },
    );

    app.get(
      "/members",
      {
        config: { scopes: ["members.read"] },
        schema: {
          tags: ["members"],
          summary: "List workspace members, deactivated ones included",
          response: { 200: page(member), ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.members.listMembers({ workspaceId: req.caller.workspaceId });
        return { data: res.data.map(memberJson), nextCursor: null };
      },
    );
  };
