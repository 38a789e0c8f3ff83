import { z } from "zod";
import { cursor, customFieldsInput, limit, page, text, timestamp } from "./common.js";

const nullableString = z.string().nullable();
/** An id given by a client: bounded, so a huge value is a 400 and never reaches a query. */
export const ref = z.string().min(1, "must not be empty").max(200, "at most 200 characters");
const tag = z.string().min(1, "tags cannot be empty").max(60, "a tag has at most 60 characters");
export const tags = z.array(tag).max(100, "at most 100 tags");
/** Money in minor units: an integer a JSON number carries exactly. */
export const valueCents = z
  .number()
  .int("valueCents must be an integer (minor units)")
  .min(0, "valueCents cannot be negative")
  .max(Number.MAX_SAFE_INTEGER, "valueCents is too large");
const currency = z.string().regex(/^[A-Za-z]{3}$/, "a three-letter ISO 4217 code");
export const dealStatus = z.enum(["open", "won", "lost"]);

const utm = z.object({
  source: nullableString,
  medium: nullableString,
  campaign: nullableString,
  term: nullableString,
  content: nullableString,
});

export const deal = z
  .object({
    id: z.string(),
    title: z.string(),
    pipelineId: z.string(),
    stageId: z.string(),
    contactId: z.string(),
    status: dealStatus,
    valueCents: z.number().int(),
    currency: z.string(),
    ownerUserId: nullableString,
    temperature: nullableString,
    tags: z.array(z.string()),
    lossReason: nullableString,
    expectedCloseAt: nullableString,
    wonAt: nullableString,
    lostAt: nullableString,
    customFields: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
    updatedAt: z.string(),
    source: nullableString,
    utm,
    origin: nullableString,
    stageChangedAt: z.string(),
    url: nullableString,
  })
  .meta({ id: "Opportunity" });

/** The single read adds three fields (SPEC.md §2 Deal): never in the list. */
export const dealDetail = deal
  .extend({
    firstHumanTouchAt: nullableString,
    lastHumanTouchAt: nullableString,
    lastActivityAt: nullableString,
  })
  .meta({ id: "OpportunityDetail" });

export const dealList = page(deal);

export const listDealsQuery = z.strictObject({
  pipelineId: ref.optional(),
  stageId: ref.optional(),
  status: dealStatus.optional(),
  contactId: ref.optional(),
  createdAfter: timestamp.optional(),
  createdBefore: timestamp.optional(),
  updatedAfter: timestamp.optional(),
  updatedBefore: timestamp.optional(),
  wonAfter: timestamp.optional(),
  wonBefore: timestamp.optional(),
  lostAfter: timestamp.optional(),
  lostBefore: timestamp.optional(),
  stageChangedAfter: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(50),
});

/** Optional create fields also accept null, meaning "not given". */
const opt = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

export const createDealBody = z
  .strictObject({
    contactId: ref,
    pipelineId: ref,
    title: text(500).min(1, "title must not be empty"),
    stageId: opt(ref),
    source: opt(text(200)),
    utmSource: opt(text(200)),
    utmMedium: opt(text(200)),
    utmCampaign: opt(text(200)),
    utmTerm: opt(text(200)),
    utmContent: opt(text(200)),
    valueCents: opt(valueCents),
    currency: opt(currency),
    ownerUserId: opt(ref),
    temperature: opt(text(60)),
    tags: opt(tags),
    expectedCloseAt: opt(timestamp),
    customFields: opt(customFieldsInput),
    origin: opt(text(200)),
    url: opt(text(2048)),
  })
  .meta({ id: "OpportunityCreate" });

export const patchDealBody = z
  .strictObject({
    title: text(500).min(1, "title must not be empty").optional(),
    stageId: ref.optional(),
    status: dealStatus.optional(),
    valueCents: valueCents.optional(),
    currency: currency.optional(),
    ownerUserId: ref.nullable().optional(),
    temperature: text(60).nullable().optional(),
    tags: tags.nullable().optional(),
    lossReason: text(2000).nullable().optional(),
    expectedCloseAt: timestamp.nullable().optional(),
    customFields: customFieldsInput.nullable().optional(),
    source: text(200).nullable().optional(),
    utm: z
      .strictObject({
        source: text(200).nullable().optional(),
        medium: text(200).nullable().optional(),
        campaign: text(200).nullable().optional(),
        term: text(200).nullable().optional(),
        content: text(200).nullable().optional(),
      })
      .nullable()
      .optional(),
  })
  .meta({ id: "OpportunityPatch" });

export const idempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, "Idempotency-Key: 1 to 255 visible ASCII characters")
  .optional();
