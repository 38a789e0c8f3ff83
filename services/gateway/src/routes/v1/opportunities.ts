import {
  type Opportunity,
  OpportunityFieldsSchema,
  OpportunityInputSchema,
  OpportunitySchema,
} from "@funil/contracts";
import { apiJsonCall, messageOf, toApiJson } from "@funil/rpc";
import { createDealBody, idParam, listDealsQuery, patchDealBody, z } from "@funil/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { GatewayContext } from "../../context.js";
import { IDEMPOTENCY_NOTE, idempotencyHeaders, withIdempotencyKey } from "../../idempotency.js";
import { writeOptions } from "../../origin.js";
import { errorResponses } from "../../schemas/common.js";
import { deal, dealDetail, page } from "../../schemas/responses.js";
import { touchesJson } from "../../touches.js";
import type { RouteApp } from "../app.js";
import { sendPage } from "./json-page.js";

const read = { scopes: ["opportunities.read"] };
const write = { scopes: ["opportunities.write"] };
const errors = errorResponses(400, 401, 403, 404, 409, 422);

const json = (res: { opportunity?: Opportunity }) => toApiJson(OpportunitySchema, res.opportunity!);

export const opportunityRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    dealReads(app, ctx);
    dealWrites(app, ctx);
    dealTrash(app, ctx);
  };

/** GET /opportunities and GET /opportunities/{id}. */
function dealReads(app: RouteApp, ctx: GatewayContext) {
  app.get(
    "/opportunities",
    {
      config: read,
      schema: {
        operationId: "listOpportunities",
        tags: ["opportunities"],
        summary: "List deals (keyset: createdAt, id; updatedAt, id when updatedAfter is given)",
        description:
          "Every *After filter is strictly later (>), every *Before strictly earlier (<). won*/lost* filters " +
          "match only won/lost deals. Trashed deals are never listed. Items do not carry firstHumanTouchAt, " +
          "lastHumanTouchAt or lastActivityAt (single read only).",
        querystring: listDealsQuery,
        response: { 200: page(deal), ...errors },
      },
    },
    async (req, reply) =>
      sendPage(
        reply,
        await apiJsonCall(ctx.crm.opportunities.listOpportunities, {
          workspaceId: req.caller.workspaceId,
          ...req.query,
        }),
      ),
  );

  app.get(
    "/opportunities/:id",
    {
      config: read,
      schema: {
        operationId: "getOpportunity",
        tags: ["opportunities"],
        summary: "Read one deal, with its first and last human touch and last activity",
        params: idParam,
        response: { 200: dealDetail, ...errors },
      },
    },
    async (req) => {
      const workspaceId = req.caller.workspaceId;
      // Both services at once: the timeline knows the deal from opportunity.created. In the moment
      // before that event reaches it, it is asked again with the deal's contact and creation time.
      // If the timeline is away the read is a 503, never invented nulls.
      const [res, first] = await Promise.all([
        ctx.crm.opportunities.getOpportunity({ workspaceId, id: req.params.id }),
        ctx.timeline.summaries.getDealSummary({ workspaceId, opportunityId: req.params.id }),
      ]);
      const deal = res.opportunity!;
      const summary = first.dealKnown
        ? first
        : await ctx.timeline.summaries.getDealSummary({
            workspaceId,
            opportunityId: deal.id,
            contactId: deal.contactId,
            since: deal.createdAt,
          });
      return Object.assign(json(res), touchesJson(summary.touches), {
        lastActivityAt: summary.lastActivityAt ?? null,
      });
    },
  );
}

/** POST /opportunities and PATCH /opportunities/{id}. */
function dealWrites(app: RouteApp, ctx: GatewayContext) {
  app.post(
    "/opportunities",
    {
      config: write,
      schema: {
        operationId: "createOpportunity",
        tags: ["opportunities"],
        summary:
          "Create a deal; without stageId it lands in the pipeline's first stage (every stage is open: " +
          "won and lost are statuses). Accepts Idempotency-Key.",
        description: `source falls back to utmSource, else null; utm is this request's utm* values only. ${IDEMPOTENCY_NOTE}`,
        headers: idempotencyHeaders,
        body: createDealBody,
        response: { 201: deal, ...errors },
      },
    },
    async (req, reply) => {
      const res = await withIdempotencyKey(req, reply, (idempotencyKey, options) =>
        ctx.crm.opportunities.createOpportunity(
          {
            workspaceId: req.caller.workspaceId,
            input: messageOf(OpportunityInputSchema, req.body),
            idempotencyKey,
          },
          options,
        ),
      );
      return reply.code(201).send(json(res));
    },
  );

  app.patch(
    "/opportunities/:id",
    {
      config: write,
      schema: {
        operationId: "updateOpportunity",
        tags: ["opportunities"],
        summary: "Update a deal: absent = untouched, null = cleared",
        description:
          "stageId change sets stageChangedAt (opportunity.stage_changed); status won sets wonAt " +
          "(opportunity.won), lost sets lostAt (opportunity.lost), open clears both.",
        params: idParam,
        body: patchDealBody,
        response: { 200: deal, ...errors },
      },
    },
    async (req) =>
      json(
        await ctx.crm.opportunities.updateOpportunity(
          {
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
            fields: messageOf(OpportunityFieldsSchema, req.body),
          },
          writeOptions(req),
        ),
      ),
  );
}

/** DELETE /opportunities/{id} (to the trash) and POST /opportunities/{id}/restore. */
function dealTrash(app: RouteApp, ctx: GatewayContext) {
  app.delete(
    "/opportunities/:id",
    {
      config: write,
      schema: {
        operationId: "deleteOpportunity",
        tags: ["opportunities"],
        summary: "Move a deal to the trash (restorable)",
        params: idParam,
        response: { 204: z.null().describe("moved to the trash"), ...errors },
      },
    },
    async (req, reply) => {
      await ctx.crm.opportunities.trashOpportunity(
        {
          workspaceId: req.caller.workspaceId,
          id: req.params.id,
        },
        writeOptions(req),
      );
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/opportunities/:id/restore",
    {
      config: write,
      schema: {
        operationId: "restoreOpportunity",
        tags: ["opportunities"],
        summary: "Bring a trashed deal back",
        params: idParam,
        response: { 200: deal, ...errors },
      },
    },
    async (req) =>
      json(
        await ctx.crm.opportunities.restoreOpportunity(
          {
            workspaceId: req.caller.workspaceId,
            id: req.params.id,
          },
          writeOptions(req),
        ),
      ),
  );
}
