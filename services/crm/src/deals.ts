import { isDeepStrictEqual } from "node:util";
import { UTM_KEYS, type UtmKey } from "./contacts.js";
import { mergeCustomFields } from "./custom-fields.js";
import { nullIfBlank, present } from "./text.js";

export type DealStatus = "open" | "won" | "lost";
export const DEAL_STATUSES: readonly DealStatus[] = ["open", "won", "lost"];
export const DEFAULT_CURRENCY = "BRL";

/** The state of a deal (docs/api/deals.md §Deal (opportunity)). Empty strings are stored as null. */
export interface DealState {
  title: string;
  pipelineId: string;
  stageId: string;
  contactId: string;
  status: DealStatus;
  valueCents: number;
  currency: string;
  ownerUserId: string | null;
  temperature: string | null;
  tags: string[];
  lossReason: string | null;
  expectedCloseAt: Date | null;
  wonAt: Date | null;
  lostAt: Date | null;
  customFields: Record<string, unknown>;
  source: string | null;
  utm: Partial<Record<UtmKey, string>>;
  origin: string | null;
  url: string | null;
  stageChangedAt: Date;
}

export interface DealRecord extends DealState {
  id: string;
  workspaceId: string;
  createdAt: Date;
  updatedAt: Date;
  trashedAt: Date | null;
}

/** The body of POST /opportunities (docs/api/deals.md §POST /opportunities). */
export interface DealInput {
  contactId: string;
  pipelineId: string;
  title: string;
  stageId?: string;
  source?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  utmTerm?: string;
  utmContent?: string;
  valueCents?: number;
  currency?: string;
  ownerUserId?: string;
  temperature?: string;
  tags?: string[];
  expectedCloseAt?: Date;
  customFields?: Record<string, unknown>;
  origin?: string;
  url?: string;
}

/** What a PATCH sent: a value, or null for "clear". Absent keys are untouched. */
export interface DealChanges {
  title?: string;
  stageId?: string;
  status?: DealStatus;
  valueCents?: number;
  currency?: string;
  ownerUserId?: string | null;
  temperature?: string | null;
  tags?: string[] | null;
  lossReason?: string | null;
  expectedCloseAt?: Date | null;
  customFields?: Record<string, unknown> | null;
  source?: string | null;
  utm?: Partial<Record<UtmKey, string | null>> | null;
}

export type DealEventType =
  | "opportunity.created"
  | "opportunity.updated"
  | "opportunity.stage_changed"
  | "opportunity.won"
  | "opportunity.lost"
  | "opportunity.trashed"
  | "opportunity.restored";

/**
 * A new deal (docs/api/deals.md §POST /opportunities): status open, in `stageId` (the caller's, or
 * the pipeline's first stage), stageChangedAt = createdAt. `source` falls back
 * to utmSource, else null; `utm` is this request's utm values only, never the
 * contact's.
 */
export function newDeal(input: DealInput, stageId: string, now: Date): DealState {
  const utmValues: Record<UtmKey, string | undefined> = {
    source: input.utmSource,
    medium: input.utmMedium,
    campaign: input.utmCampaign,
    term: input.utmTerm,
    content: input.utmContent,
  };
  const utm: Partial<Record<UtmKey, string>> = {};
  for (const k of UTM_KEYS) if (present(utmValues[k])) utm[k] = utmValues[k];
  return {
    title: input.title,
    pipelineId: input.pipelineId,
    stageId,
    contactId: input.contactId,
    status: "open",
    valueCents: input.valueCents ?? 0,
    currency: present(input.currency) ? input.currency.toUpperCase() : DEFAULT_CURRENCY,
    ownerUserId: nullIfBlank(input.ownerUserId),
    temperature: nullIfBlank(input.temperature),
    tags: [...new Set(input.tags ?? [])],
    lossReason: null,
    expectedCloseAt: input.expectedCloseAt ?? null,
    wonAt: null,
    lostAt: null,
    customFields: { ...(input.customFields ?? {}) },
    source: nullIfBlank(input.source) ?? nullIfBlank(input.utmSource),
    utm,
    origin: nullIfBlank(input.origin),
    url: nullIfBlank(input.url),
    stageChangedAt: now,
  };
}

/**
 * PATCH rules (docs/api/deals.md §PATCH /opportunities/{id}): absent = untouched, null = cleared; tags replaced;
 * customFields and utm merged key by key (a null value removes a key).
 * A stage change moves stageChangedAt; won sets wonAt, lost sets lostAt (the
 * lossReason is kept), open clears both. Returns the next state and the
 * events it causes: none when nothing changed.
 */
export function applyDealPatch(
  current: DealState,
  patch: DealChanges,
  now: Date,
): { next: DealState; events: DealEventType[] } {
  const next: DealState = { ...current };
  if (patch.title !== undefined) next.title = patch.title;
  if (patch.valueCents !== undefined) next.valueCents = patch.valueCents;
  if (patch.currency !== undefined) next.currency = patch.currency.toUpperCase();
  for (const f of ["ownerUserId", "temperature", "lossReason", "source"] as const) {
    if (f in patch) next[f] = nullIfBlank(patch[f]);
  }
  if ("expectedCloseAt" in patch) next.expectedCloseAt = patch.expectedCloseAt ?? null;
  if ("tags" in patch) next.tags = [...new Set(patch.tags ?? [])];
  if ("customFields" in patch)
    next.customFields = patch.customFields ? mergeCustomFields(current.customFields, patch.customFields) : {};
  if ("utm" in patch) {
    if (!patch.utm) next.utm = {};
    else {
      const utm = { ...current.utm };
      for (const k of UTM_KEYS) {
        if (!(k in patch.utm)) continue;
        const v = patch.utm[k];
        if (present(v)) utm[k] = v;
        else delete utm[k];
      }
      next.utm = utm;
    }
  }

  const events: DealEventType[] = [];
  if (patch.stageId !== undefined && patch.stageId !== current.stageId) {
    next.stageId = patch.stageId;
    next.stageChangedAt = now;
    events.push("opportunity.stage_changed");
  }
  if (patch.status !== undefined && patch.status !== current.status) {
    next.status = patch.status;
    next.wonAt = patch.status === "won" ? now : null;
    next.lostAt = patch.status === "lost" ? now : null;
    if (patch.status === "won") events.push("opportunity.won");
    if (patch.status === "lost") events.push("opportunity.lost");
  }
  if (events.length === 0 && sameDeal(current, next)) return { next: current, events: [] };
  return { next, events: ["opportunity.updated", ...events] };
}

function comparable(d: DealState) {
  return { ...d, expectedCloseAt: d.expectedCloseAt?.getTime() ?? null };
}

export function sameDeal(a: DealState, b: DealState): boolean {
  return isDeepStrictEqual(comparable(a), comparable(b));
}
