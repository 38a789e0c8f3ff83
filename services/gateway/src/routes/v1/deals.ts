import { create } from "@bufbuild/protobuf";
import {
  type Opportunity,
  OpportunityFieldsSchema,
  OpportunityInputSchema,
  OpportunitySchema,
} from "@funil/contracts";
import { requestFingerprint } from "@funil/db";
import { toApiJson } from "@funil/rpc";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { GatewayContext } from "../../context.js";
import { errorResponses, idParam } from "../../schemas/common.js";
import {
  createDealBody,
  deal,
  dealDetail,
  dealList,
  idempotencyKey,
  listDealsQuery,
  patchDealBody,
} from "../../schemas/deals.js";
import { setClearFields, stringList } from "./fields.js";

const read = { scopes: ["opportunities.read"] };
const write = { scopes: ["opportunities.write"] };
const errors = errorResponses(400, 401, 403, 404, 409, 422);

export const dealJson = (d: Opportunity | undefined) =>
  toApiJson(OpportunitySchema, d!) as z.infer<typeof deal>;

/** Drops the nulls a client may send for "not given" on create. */
function given<T extends Record<string, unknown>>(body: T) {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null && v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], null>;
  };
}

/** The PATCH body as the proto's set / clear / absent triple; money travels as int64. */
const toFields = (body: z.infer<typeof patchDealBody>) =>
  setClearFields(OpportunityFieldsSchema, body, { tags: stringList, valueCents: (v: number) => BigInt(v) });

export const dealRoutes =
  (ctx: GatewayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/opportunities",
      {
        config: read,
        schema: {
          tags: ["opportunities"],
          summary: "List deals (keyset: createdAt, id; updatedAt, id when updatedAfter is given)",
          description:
            "Every *After filter is strictly later (>), every *Before strictly earlier (<). won*/lost* filters " +
            "match only won/lost deals. Trashed deals are never listed. Items do not carry firstHumanTouchAt, " +
            "lastHumanTouchAt or lastActivityAt (single read only).",
          querystring: listDealsQuery,
          response: { 200: dealList, ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.opportunities.listOpportunities({
          workspaceId: req.caller.workspaceId,
          ...req.query,
        });
        return { data: res.data.map(dealJson), nextCursor: res.nextCursor ?? null };
      },
    );

    app.get(
      "/opportunities/:id",
      {
        config: read,
        schema: {
          tags: ["opportunities"],
          summary: "Read one deal, with its first and last human touch and last activity",
          params: idParam,
          response: { 200: dealDetail, ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.opportunities.getOpportunity({
          workspaceId: req.caller.workspaceId,
          id: req.params.id,
        });
        // Touches and last activity come from the timeline service, which has its own issue:
        // null ("not happened yet") until it exists.
        return {
          ...dealJson(res.opportunity),
          firstHumanTouchAt: null,
          lastHumanTouchAt: null,
          lastActivityAt: null,
        };
      },
    );

    app.post(
      "/opportunities",
      {
        config: write,
        schema: {
          tags: ["opportunities"],
          summary:
            "Create a deal; without stageId it lands in the pipeline's first stage (every stage is open: " +
            "won and lost are statuses). Accepts Idempotency-Key.",
          description:
            "source falls back to utmSource, else null; utm is this request's utm* values only. " +
            "With an Idempotency-Key, a repeat of the same request within 24 h replays the first response " +
            "(header idempotent-replayed: true); another body under the same key is 422 " +
            "idempotency_key_reused; a repeat while the first is in flight is 409 idempotency_key_in_use.",
          headers: z.object({ "idempotency-key": idempotencyKey }),
          body: createDealBody,
          response: { 201: deal, ...errors },
        },
      },
      async (req, reply) => {
        const key = req.headers["idempotency-key"];
        const b = given(req.body);
        const res = await ctx.crm.opportunities.createOpportunity({
          workspaceId: req.caller.workspaceId,
          input: create(OpportunityInputSchema, {
            ...b,
            valueCents: b.valueCents === undefined ? undefined : BigInt(b.valueCents),
            customFields: b.customFields as never,
          }),
          idempotencyKey: key,
          fingerprint:
            key === undefined ? undefined : requestFingerprint("POST", req.url.split("?")[0]!, req.body),
        });
        if (res.replayed)
          return reply
            .code(res.status)
            .header("idempotent-replayed", "true")
            .send(res.body as never);
        return reply.code(201).send(dealJson(res.opportunity));
      },
    );

    app.patch(
      "/opportunities/:id",
      {
        config: write,
        schema: {
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
      async (req) => {
        const res = await ctx.crm.opportunities.updateOpportunity({
          workspaceId: req.caller.workspaceId,
          id: req.params.id,
          fields: toFields(req.body),
        });
        return dealJson(res.opportunity);
      },
    );

    app.delete(
      "/opportunities/:id",
      {
        config: write,
        schema: {
          tags: ["opportunities"],
          summary: "Move a deal to the trash (restorable)",
          params: idParam,
          response: { 204: z.null().describe("moved to the trash"), ...errors },
        },
      },
      async (req, reply) => {
        await ctx.crm.opportunities.trashOpportunity({
          workspaceId: req.caller.workspaceId,
          id: req.params.id,
        });
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/opportunities/:id/restore",
      {
        config: write,
        schema: {
          tags: ["opportunities"],
          summary: "Bring a trashed deal back",
          params: idParam,
          response: { 200: deal, ...errors },
        },
      },
      async (req) => {
        const res = await ctx.crm.opportunities.restoreOpportunity({
          workspaceId: req.caller.workspaceId,
          id: req.params.id,
        });
        return dealJson(res.opportunity);
      },
    );
  };
