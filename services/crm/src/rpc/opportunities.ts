import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  ListOpportunitiesRequestSchema,
  ListOpportunitiesResponseSchema,
  type Opportunity,
  type OpportunityFields,
  OpportunityFieldsSchema,
  OpportunityInputSchema,
  OpportunitySchema,
  type OpportunityService,
} from "@funil/contracts";
import { type FiltersOf, getById, originOf, type Sql } from "@funil/db";
import {
  fromApiJson,
  keyedCall,
  plainOf,
  type Remember,
  replayOf,
  rowList,
  runOnce,
  toApiJson,
} from "@funil/rpc";
import {
  check,
  createDealBody,
  idParam,
  instant,
  listDealsQuery,
  patchDealBody,
  type z,
} from "@funil/schemas";
import type { DealChanges, DealInput, DealRecord } from "../deals.js";
import type { CustomFieldStore } from "../store/custom-fields.js";
import type { DealFilters, DealStore } from "../store/deals.js";
import { customFieldsGuard } from "./custom-fields.js";
import { dealWire } from "./wire.js";

const LIST = "opportunities";

/** A created deal is remembered under its key as the API shows it. */
const rememberDeal: Remember<{ opportunity: Opportunity }> = {
  encode: (r) => toApiJson(OpportunitySchema, r.opportunity),
  decode: (ok) => ({ opportunity: fromApiJson(OpportunitySchema, ok) }),
};

/** On create a null means "not given". */
const given = <T>(v: T | null | undefined) => v ?? undefined;

function inputOf(body: z.output<typeof createDealBody>): DealInput {
  return {
    contactId: body.contactId,
    pipelineId: body.pipelineId,
    title: body.title.trim(),
    stageId: given(body.stageId),
    source: given(body.source),
    utmSource: given(body.utmSource),
    utmMedium: given(body.utmMedium),
    utmCampaign: given(body.utmCampaign),
    utmTerm: given(body.utmTerm),
    utmContent: given(body.utmContent),
    valueCents: given(body.valueCents),
    currency: given(body.currency),
    ownerUserId: given(body.ownerUserId),
    temperature: given(body.temperature),
    tags: given(body.tags),
    expectedCloseAt: given(instant(body.expectedCloseAt)),
    customFields: given(body.customFields),
    origin: given(body.origin),
    url: given(body.url),
  };
}

function changesOf(body: z.output<typeof patchDealBody>): DealChanges {
  const { title, expectedCloseAt, ...rest } = body;
  const changes: DealChanges = rest;
  if (title !== undefined) changes.title = title.trim();
  if (expectedCloseAt !== undefined) changes.expectedCloseAt = instant(expectedCloseAt);
  return changes;
}

/** A checked list query's filters as the store reads them. */
function filtersOf(bound: FiltersOf<typeof listDealsQuery>): DealFilters {
  return {
    ...bound,
    createdAfter: instant(bound.createdAfter),
    createdBefore: instant(bound.createdBefore),
    updatedAfter: instant(bound.updatedAfter),
    updatedBefore: instant(bound.updatedBefore),
    wonAfter: instant(bound.wonAfter),
    wonBefore: instant(bound.wonBefore),
    lostAfter: instant(bound.lostAfter),
    lostBefore: instant(bound.lostBefore),
    stageChangedAfter: instant(bound.stageChangedAfter),
  };
}

export function opportunityService(deps: {
  sql: Sql;
  deals: DealStore;
  customFields: CustomFieldStore;
  clock: Clock;
}): ServiceImpl<typeof OpportunityService> {
  const { deals, clock } = deps;
  const checkCustomFields = customFieldsGuard(deps.customFields);
  const reply = (r: DealRecord) => ({ opportunity: dealWire.proto(r) });
  // Pages are written from the statement's raw rows (row-pages.ts); the object path stays for the rest.
  const list = rowList({
    list: LIST,
    query: listDealsQuery,
    defaultLimit: 50,
    sortKey: (d: DealRecord, bound) => (bound.updatedAfter ? d.updatedAt : d.createdAt),
    sortColumn: (bound) => (bound.updatedAfter ? "updatedAt" : "createdAt"),
    response: ListOpportunitiesResponseSchema,
    statement: (workspaceId, bound, take, after) =>
      deals.listQuery(workspaceId, filtersOf(bound), take, after),
    fetch: (workspaceId, bound, take, after) => deals.list(workspaceId, filtersOf(bound), take, after),
    toMessage: (r) => dealWire.proto(r),
  });

  return {
    listOpportunities: (req) => list(req.workspaceId, plainOf(ListOpportunitiesRequestSchema, req)),

    getOpportunity: getById("opportunity", deals.get, reply),

    /** Create, at most once per Idempotency-Key (docs/api/conventions.md §Idempotency-Key). */
    async createOpportunity(req, ctx) {
      const plain = plainOf(OpportunityInputSchema, req.input ?? create(OpportunityInputSchema));
      const input = inputOf(check(createDealBody, plain, "body"));
      const call = keyedCall(deps.sql, req, "CreateOpportunity", plain, clock.now(), rememberDeal);
      const replay = await replayOf(ctx, call);
      if (replay) return replay;
      await checkCustomFields(req.workspaceId, "opportunity", input.customFields);
      return runOnce(ctx, call, async (tx) => ({
        opportunity: dealWire.proto(
          await deals.create(req.workspaceId, input, call.now, originOf(ctx.requestHeader), tx),
        ),
      }));
    },

    async updateOpportunity(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const fields: OpportunityFields = req.fields ?? create(OpportunityFieldsSchema);
      const changes = changesOf(check(patchDealBody, plainOf(OpportunityFieldsSchema, fields), "body"));
      await checkCustomFields(req.workspaceId, "opportunity", changes.customFields);
      return reply(
        await deals.update(req.workspaceId, id, changes, clock.now(), originOf(ctx.requestHeader)),
      );
    },

    async trashOpportunity(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      await deals.trash(req.workspaceId, id, clock.now(), originOf(ctx.requestHeader));
      return {};
    },

    async restoreOpportunity(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      return reply(await deals.restore(req.workspaceId, id, clock.now(), originOf(ctx.requestHeader)));
    },
  };
}
