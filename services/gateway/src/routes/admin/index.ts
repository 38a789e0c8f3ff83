import { CalendarSchema, CustomFieldSchema, MemberSchema, PipelineSchema } from "@funil/contracts";
import { notFound } from "@funil/errors";
import { toApiJson } from "@funil/rpc";
import {
  createCalendarBody,
  createCustomFieldBody,
  createMemberBody,
  createPipelineBody,
  patchMemberBody,
  z,
} from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { generateKey, hashKey, SCOPES, sameSecret } from "../../keys.js";
import { authorizationHeaders } from "../../plugins/auth.js";
import { errorBody } from "../../plugins/errors.js";
import { errorResponses } from "../../schemas/common.js";
import { calendar, customField, member, page, pipeline } from "../../schemas/responses.js";
import type { KeyRecord, WorkspaceRecord } from "../../store/keys.js";
import { pageOf, wholeListQuery } from "../v1/whole-list.js";

const workspace = z.object({
  id: z.string(),
  name: z.string(),
  operator: z.boolean(),
  createdAt: z.string(),
});
const apiKey = z.object({
  id: z.string(),
  workspaceId: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  prefix: z.string(),
  createdAt: z.string(),
});
const wsParam = z.strictObject({ ws: z.string().min(1).max(100) });
const scopes = z
  .array(z.enum(SCOPES))
  .max(SCOPES.length)
  .transform((s) => [...new Set(s)]);
const errors = errorResponses(400, 401, 404, 409, 422);

const workspaceJson = (w: WorkspaceRecord) => ({ ...w, createdAt: w.createdAt.toISOString() });
const keyJson = (k: KeyRecord) => ({
  id: k.id,
  workspaceId: k.workspaceId,
  name: k.name,
  scopes: k.scopes,
  prefix: k.prefix,
  createdAt: k.createdAt.toISOString(),
});

/**
 * The admin API (docs/api/admin.md §Routes): operators of the installation, authenticated by
 * ADMIN_TOKEN. Without ADMIN_TOKEN the routes do not exist.
 */
export const adminRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const token = ctx.config.ADMIN_TOKEN;
    app.addHook("onRequest", async (req, reply) => {
      const headers = authorizationHeaders(req.raw.rawHeaders);
      const match = headers.length === 1 ? /^Bearer\s+(\S+)\s*$/i.exec(headers[0]!) : null;
      if (!token || !match || !sameSecret(match[1]!, token))
        return reply
          .code(401)
          .send(errorBody("unauthorized", "admin routes need Authorization: Bearer <ADMIN_TOKEN>"));
    });

    async function mustWorkspace(id: string) {
      const ws = await ctx.keyStore.getWorkspace(id);
      if (!ws) throw notFound("workspace");
      return ws;
    }

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
        const ws = await ctx.keyStore.createWorkspace(req.body.name, req.body.operator, ctx.clock.now());
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
        const ws = await ctx.keyStore.updateWorkspace(req.params.ws, req.body, ctx.clock.now());
        if (!ws) await mustWorkspace(req.params.ws);
        // The operator flag is part of every cached caller of this workspace.
        await ctx.keys.invalidateWorkspace(req.params.ws);
        return workspaceJson(ws!);
      },
    );

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
        await mustWorkspace(req.params.ws);
        const secret = generateKey();
        const key = await ctx.keyStore.createKey(
          req.params.ws,
          { name: req.body.name, scopes: req.body.scopes, prefix: secret.slice(0, 8), hash: hashKey(secret) },
          ctx.clock.now(),
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
          params: z.strictObject({ id: z.string().min(1).max(100) }),
          body: z.strictObject({ scopes }),
          response: { 200: apiKey, ...errors },
        },
      },
      async (req) => {
        const key = await ctx.keyStore.setScopes(req.params.id, req.body.scopes, ctx.clock.now());
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
          params: z.strictObject({ id: z.string().min(1).max(100) }),
          response: { 204: z.null().describe("revoked"), ...errors },
        },
      },
      async (req, reply) => {
        const revoked = await ctx.keyStore.revoke(req.params.id, ctx.clock.now());
        if (!revoked) throw notFound("key");
        await ctx.keys.invalidate(req.params.id);
        return reply.code(204).send(null);
      },
    );

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
        await mustWorkspace(req.params.ws);
        const res = await ctx.crm.members.createMember({ workspaceId: req.params.ws, ...req.body });
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
        await mustWorkspace(req.params.ws);
        const res = await ctx.crm.members.updateMember({
          workspaceId: req.params.ws,
          id: req.params.id,
          ...req.body,
        });
        return toApiJson(MemberSchema, res.member!);
      },
    );

    app.post(
      "/workspaces/:ws/custom-fields",
      {
        schema: {
          tags: ["admin"],
          summary: "Define a custom field of contacts or deals",
          params: wsParam,
          body: createCustomFieldBody,
          response: { 201: customField, ...errors },
        },
      },
      async (req, reply) => {
        await mustWorkspace(req.params.ws);
        const res = await ctx.crm.customFields.createCustomField({
          workspaceId: req.params.ws,
          ...req.body,
          options: req.body.options ?? [],
        });
        return reply.code(201).send(toApiJson(CustomFieldSchema, res.customField!));
      },
    );

    app.post(
      "/workspaces/:ws/pipelines",
      {
        schema: {
          tags: ["admin"],
          summary: "Create a pipeline; stages keep the order given (every stage is an open stage)",
          params: wsParam,
          body: createPipelineBody,
          response: { 201: pipeline, ...errors },
        },
      },
      async (req, reply) => {
        await mustWorkspace(req.params.ws);
        const res = await ctx.crm.pipelines.createPipeline({
          workspaceId: req.params.ws,
          name: req.body.name,
          stageNames: req.body.stages.map((s) => s.name),
        });
        return reply.code(201).send(toApiJson(PipelineSchema, res.pipeline!));
      },
    );

    app.post(
      "/workspaces/:ws/calendars",
      {
        schema: {
          tags: ["admin"],
          summary: "Create a calendar; its assignees must be active members of the workspace",
          description:
            "availability is weekly windows in the calendar's local time (weekday 0 = Sunday); " +
            "slotIntervalMin defaults to durationMin; timezone is an IANA zone (unknown → 400).",
          params: wsParam,
          body: createCalendarBody,
          response: { 201: calendar, ...errors },
        },
      },
      async (req, reply) => {
        await mustWorkspace(req.params.ws);
        const res = await ctx.scheduling.calendars.createCalendar({
          workspaceId: req.params.ws,
          ...req.body,
        });
        return reply.code(201).send(toApiJson(CalendarSchema, res.calendar!));
      },
    );
  };
