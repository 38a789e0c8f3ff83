import { create, type JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  FunnelSchema,
  type FunnelService,
  type Opportunity,
  type OpportunityFields,
  type OpportunityInput,
  OpportunitySchema,
  type OpportunityService,
  type PipelineService,
  UtmSchema,
} from "@funil/contracts";
import { IdempotencyKeyError, type StoredResponse } from "@funil/db";
import {
  apiError,
  describeError,
  type ErrorDetail,
  invalid,
  keysetPage,
  notFound,
  parseTimestamp,
  toApiJson,
} from "@funil/rpc";
import { UTM_KEYS, type UtmKey } from "../contacts.js";
import { checkCustomFields } from "../custom-fields.js";
import {
  DEAL_STATUSES,
  type DealChanges,
  type DealInput,
  type DealRecord,
  type DealStatus,
} from "../deals.js";
import { checkRange, summarize } from "../funnel.js";
import type { CustomFieldStore } from "../store/custom-fields.js";
import type { DealFilters, DealStore } from "../store/deals.js";
import type { FunnelStore } from "../store/funnel.js";
import type { PipelineRecord, PipelineStore } from "../store/pipelines.js";
import { invalidReference } from "../store/references.js";

const orNull = <T>(v: T | null | undefined) => (v === null ? undefined : v);
const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

export function dealToProto(r: DealRecord): Opportunity {
  return create(OpportunitySchema, {
    id: r.id,
    title: r.title,
    pipelineId: r.pipelineId,
    stageId: r.stageId,
    contactId: r.contactId,
    status: r.status,
    valueCents: BigInt(r.valueCents),
    currency: r.currency,
    ownerUserId: orNull(r.ownerUserId),
    temperature: orNull(r.temperature),
    tags: r.tags,
    lossReason: orNull(r.lossReason),
    expectedCloseAt: iso(r.expectedCloseAt),
    wonAt: iso(r.wonAt),
    lostAt: iso(r.lostAt),
    customFields: r.customFields as JsonObject,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    source: orNull(r.source),
    utm: create(UtmSchema, r.utm),
    origin: orNull(r.origin),
    stageChangedAt: r.stageChangedAt.toISOString(),
    url: orNull(r.url),
  });
}

/** The deal as the API returns it (event payloads and remembered responses alike). */
export const dealJson = (r: DealRecord) => toApiJson(OpportunitySchema, dealToProto(r));

export const pipelineToProto = (p: PipelineRecord) => ({ id: p.id, name: p.name, stages: p.stages });

const MAX_VALUE_CENTS = BigInt(Number.MAX_SAFE_INTEGER);
const CURRENCY = /^[A-Za-z]{3}$/;
const MAX_TEXT = 500;

/** Collects problems instead of stopping at the first, so a client sees them all. */
class Problems {
  readonly list: ErrorDetail[] = [];
  add(path: string, message: string) {
    this.list.push({ path, message });
  }
  time(path: string, value: string | undefined): Date | undefined {
    if (value === undefined) return undefined;
    const at = parseTimestamp(value);
    if (!at) this.add(path, "must be an ISO-8601 timestamp");
    return at;
  }
  text(path: string, value: string | undefined, { required = false, max = MAX_TEXT } = {}) {
    if (value === undefined) {
      if (required) this.add(path, "is required");
      return;
    }
    if (required && value.trim() === "") this.add(path, "must not be empty");
    if (value.length > max) this.add(path, `must have at most ${max} characters`);
  }
  cents(path: string, value: bigint | undefined): number | undefined {
    if (value === undefined) return undefined;
    if (value < 0n || value > MAX_VALUE_CENTS) {
      this.add(path, `must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`);
      return undefined;
    }
    return Number(value);
  }
  currency(path: string, value: string | undefined) {
    if (value !== undefined && !CURRENCY.test(value)) this.add(path, "must be a three-letter ISO 4217 code");
  }
  throwIfAny() {
    if (this.list.length > 0)
      throw invalid(this.list.map((p) => `${p.path} ${p.message}`).join("; "), this.list);
  }
}

function inputOf(i: OpportunityInput | undefined): DealInput {
  const p = new Problems();
  if (!i) throw invalid("the deal is required");
  for (const f of ["contactId", "pipelineId", "title"] as const) p.text(f, i[f], { required: true });
  for (const f of ["stageId", "source", "ownerUserId", "temperature", "origin"] as const) p.text(f, i[f]);
  for (const f of ["utmSource", "utmMedium", "utmCampaign", "utmTerm", "utmContent"] as const)
    p.text(f, i[f], { max: 200 });
  p.text("url", i.url, { max: 2048 });
  p.currency("currency", i.currency);
  const valueCents = p.cents("valueCents", i.valueCents);
  const expectedCloseAt = p.time("expectedCloseAt", i.expectedCloseAt);
  if (i.tags.length > 100 || i.tags.some((t) => t.length === 0 || t.length > 60))
    p.add("tags", "at most 100 tags of 1 to 60 characters");
  p.throwIfAny();
  return {
    contactId: i.contactId,
    pipelineId: i.pipelineId,
    title: i.title.trim(),
    stageId: i.stageId,
    source: i.source,
    utmSource: i.utmSource,
    utmMedium: i.utmMedium,
    utmCampaign: i.utmCampaign,
    utmTerm: i.utmTerm,
    utmContent: i.utmContent,
    valueCents,
    currency: i.currency,
    ownerUserId: i.ownerUserId,
    temperature: i.temperature,
    tags: i.tags,
    expectedCloseAt,
    customFields: i.customFields,
    origin: i.origin,
    url: i.url,
  };
}

const CLEARABLE = new Set([
  "ownerUserId",
  "temperature",
  "tags",
  "lossReason",
  "expectedCloseAt",
  "customFields",
  "source",
  "utm",
]);

/** The proto's "set / clear / absent" triple as the domain's changes. */
function changesOf(f: OpportunityFields | undefined): DealChanges {
  const changes: DealChanges = {};
  if (!f) return changes;
  const p = new Problems();
  p.text("title", f.title, { required: f.title !== undefined });
  for (const name of ["stageId", "ownerUserId", "temperature", "source"] as const) p.text(name, f[name]);
  p.text("lossReason", f.lossReason, { max: 2000 });
  p.currency("currency", f.currency);
  if (f.status !== undefined && !DEAL_STATUSES.includes(f.status as DealStatus))
    p.add("status", "must be open, won or lost");
  if (f.stageId !== undefined && f.stageId.trim() === "") p.add("stageId", "must not be empty");
  const valueCents = p.cents("valueCents", f.valueCents);
  const expectedCloseAt = p.time("expectedCloseAt", f.expectedCloseAt);
  if (f.tags && (f.tags.values.length > 100 || f.tags.values.some((t) => t.length === 0 || t.length > 60)))
    p.add("tags", "at most 100 tags of 1 to 60 characters");
  if (f.utm) {
    for (const [k, v] of Object.entries(f.utm)) {
      if (
        !(UTM_KEYS as readonly string[]).includes(k) ||
        (v !== null && (typeof v !== "string" || v.length > 200))
      )
        p.add(
          `utm.${k}`,
          "utm keys are source, medium, campaign, term, content with strings of at most 200 characters",
        );
    }
  }
  for (const name of f.clear) if (!CLEARABLE.has(name)) p.add(name, "cannot be cleared");
  p.throwIfAny();

  if (f.title !== undefined) changes.title = f.title.trim();
  if (f.stageId !== undefined) changes.stageId = f.stageId;
  if (f.status !== undefined) changes.status = f.status as DealStatus;
  if (valueCents !== undefined) changes.valueCents = valueCents;
  if (f.currency !== undefined) changes.currency = f.currency;
  for (const name of ["ownerUserId", "temperature", "lossReason", "source"] as const)
    if (f[name] !== undefined) changes[name] = f[name];
  if (expectedCloseAt) changes.expectedCloseAt = expectedCloseAt;
  if (f.tags) changes.tags = f.tags.values;
  if (f.customFields) changes.customFields = f.customFields;
  if (f.utm) changes.utm = f.utm as Partial<Record<UtmKey, string | null>>;
  for (const name of f.clear) (changes as Record<string, null>)[name] = null;
  return changes;
}

/**
 * Which responses an Idempotency-Key remembers (API.md §9): 2xx and every 4xx
 * but 400 validation_failed (nothing was attempted) and 409
 * idempotency_key_in_use; a 5xx is not remembered, so the request can be retried.
 */
export function rememberedError(err: unknown): StoredResponse | undefined {
  const d = describeError(err);
  if (d.status >= 500 || d.code === "validation_failed" || d.code === "idempotency_key_in_use")
    return undefined;
  const error = d.details
    ? { code: d.code, message: d.message, details: d.details }
    : { code: d.code, message: d.message };
  return { status: d.status, body: { error } };
}

const LIST = "opportunities";

export function opportunityService(deps: {
  deals: DealStore;
  customFields: CustomFieldStore;
  clock: Clock;
}): ServiceImpl<typeof OpportunityService> {
  const { deals, customFields, clock } = deps;

  async function checkFields(workspaceId: string, values: Record<string, unknown> | undefined) {
    if (!values) return;
    const problems = checkCustomFields(values, await customFields.list(workspaceId, "opportunity"));
    if (problems.length > 0) throw invalid(problems.map((p) => p.message).join("; "), problems);
  }

  return {
    async listOpportunities(req) {
      const p = new Problems();
      const raw = {
        pipelineId: req.pipelineId,
        stageId: req.stageId,
        status: req.status,
        contactId: req.contactId,
        createdAfter: req.createdAfter,
        createdBefore: req.createdBefore,
        updatedAfter: req.updatedAfter,
        updatedBefore: req.updatedBefore,
        wonAfter: req.wonAfter,
        wonBefore: req.wonBefore,
        lostAfter: req.lostAfter,
        lostBefore: req.lostBefore,
        stageChangedAfter: req.stageChangedAfter,
      };
      if (req.status !== undefined && !DEAL_STATUSES.includes(req.status as DealStatus))
        p.add("status", "must be open, won or lost");
      const filters: DealFilters = {
        pipelineId: req.pipelineId,
        stageId: req.stageId,
        status: req.status as DealStatus | undefined,
        contactId: req.contactId,
        createdAfter: p.time("createdAfter", req.createdAfter),
        createdBefore: p.time("createdBefore", req.createdBefore),
        updatedAfter: p.time("updatedAfter", req.updatedAfter),
        updatedBefore: p.time("updatedBefore", req.updatedBefore),
        wonAfter: p.time("wonAfter", req.wonAfter),
        wonBefore: p.time("wonBefore", req.wonBefore),
        lostAfter: p.time("lostAfter", req.lostAfter),
        lostBefore: p.time("lostBefore", req.lostBefore),
        stageChangedAfter: p.time("stageChangedAfter", req.stageChangedAfter),
      };
      p.throwIfAny();
      const { rows, nextCursor } = await keysetPage<DealRecord>({
        list: LIST,
        workspaceId: req.workspaceId,
        filters: raw,
        cursor: req.cursor,
        limit: req.limit,
        defaultLimit: 50,
        sortKey: (d) => (filters.updatedAfter ? d.updatedAt : d.createdAt),
        fetch: (take, after) => deals.list(req.workspaceId, filters, take, after),
      });
      return { data: rows.map(dealToProto), nextCursor };
    },

    async getOpportunity(req) {
      const row = await deals.get(req.workspaceId, req.id);
      if (!row) throw notFound("opportunity");
      return { opportunity: dealToProto(row) };
    },

    async createOpportunity(req) {
      const input = inputOf(req.input);
      await checkFields(req.workspaceId, input.customFields);
      const now = clock.now();
      if (req.idempotencyKey === undefined) {
        return { opportunity: dealToProto(await deals.create(req.workspaceId, input, now)), status: 201 };
      }
      if (!req.fingerprint || req.idempotencyKey.length === 0 || req.idempotencyKey.length > 255)
        throw invalid("an Idempotency-Key of 1 to 255 characters and its request fingerprint are required");
      try {
        const result = await deals.createOnce(
          { workspaceId: req.workspaceId, key: req.idempotencyKey, fingerprint: req.fingerprint },
          input,
          now,
          { respond: (deal) => ({ status: 201, body: dealJson(deal) }), rememberError: rememberedError },
        );
        if (result.replayed)
          return { replayed: true, status: result.response.status, body: result.response.body as JsonObject };
        return { opportunity: dealToProto(result.value), status: 201 };
      } catch (err) {
        if (err instanceof IdempotencyKeyError) throw apiError(err.code, err.message);
        throw err;
      }
    },

    async updateOpportunity(req) {
      const changes = changesOf(req.fields);
      if (changes.customFields) await checkFields(req.workspaceId, changes.customFields);
      return { opportunity: dealToProto(await deals.update(req.workspaceId, req.id, changes, clock.now())) };
    },

    async trashOpportunity(req) {
      await deals.trash(req.workspaceId, req.id, clock.now());
      return {};
    },

    async restoreOpportunity(req) {
      return { opportunity: dealToProto(await deals.restore(req.workspaceId, req.id, clock.now())) };
    },
  };
}

export function pipelineService(deps: {
  pipelines: PipelineStore;
  clock: Clock;
}): ServiceImpl<typeof PipelineService> {
  return {
    async createPipeline(req) {
      const p = new Problems();
      p.text("name", req.name, { required: true, max: 200 });
      if (req.stageNames.length < 1 || req.stageNames.length > 50) p.add("stages", "from 1 to 50 stages");
      for (const [i, n] of req.stageNames.entries())
        p.text(`stages.${i}.name`, n, { required: true, max: 200 });
      p.throwIfAny();
      const row = await deps.pipelines.create(
        req.workspaceId,
        req.name.trim(),
        req.stageNames.map((n) => n.trim()),
        deps.clock.now(),
      );
      return { pipeline: pipelineToProto(row) };
    },
    async listPipelines(req) {
      return { data: (await deps.pipelines.list(req.workspaceId)).map(pipelineToProto) };
    },
  };
}

export function funnelService(deps: { funnel: FunnelStore }): ServiceImpl<typeof FunnelService> {
  return {
    async getFunnel(req) {
      const p = new Problems();
      const range = { from: p.time("from", req.from), to: p.time("to", req.to) };
      p.throwIfAny();
      const rangeProblems = checkRange(range);
      if (rangeProblems.length > 0) throw invalid(rangeProblems[0]!.message, rangeProblems);
      if (
        req.pipelineId !== undefined &&
        !(await deps.funnel.pipelineExists(req.workspaceId, req.pipelineId))
      )
        throw invalidReference([
          { path: "pipelineId", message: `no pipeline ${req.pipelineId} in this workspace` },
        ]);
      const summary = summarize(
        range,
        req.pipelineId,
        await deps.funnel.rows(req.workspaceId, req.pipelineId, range),
      );
      const tally = (t: { count: number; valueCents: number }) => ({
        count: BigInt(t.count),
        valueCents: BigInt(t.valueCents),
      });
      return {
        funnel: create(FunnelSchema, {
          from: summary.from ?? undefined,
          to: summary.to ?? undefined,
          pipelineId: summary.pipelineId ?? undefined,
          total: tally(summary.total),
          byStage: summary.byStage.map((s) => ({ stageId: s.stageId, name: s.name, ...tally(s) })),
          byStatus: {
            open: tally(summary.byStatus.open),
            won: tally(summary.byStatus.won),
            lost: tally(summary.byStatus.lost),
          },
          closedInRange: { won: tally(summary.closedInRange.won), lost: tally(summary.closedInRange.lost) },
        }),
      };
    },
  };
}
