import { z } from "zod";
import {
  cursor,
  customFieldsInput,
  limit,
  opt,
  ref,
  tags,
  text,
  timestamp,
  title,
  utmPatch,
} from "./common.js";

/** Money in minor units: an integer a JSON number carries exactly. */
export const valueCents = z
  .number()
  .int("valueCents must be an integer (minor units)")
  .min(0, "valueCents cannot be negative")
  .max(Number.MAX_SAFE_INTEGER, "valueCents is too large");
const currency = z.string().regex(/^[A-Za-z]{3}$/, "a three-letter ISO 4217 code");
export const dealStatus = z.enum(["open", "won", "lost"]);

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

export const createDealBody = z
  .strictObject({
    contactId: ref,
    pipelineId: ref,
    title: title(500),
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
    title: title(500).optional(),
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
    utm: utmPatch.nullable().optional(),
  })
  .meta({ id: "OpportunityPatch" });

/** docs/api/conventions.md §Idempotency-Key: 1 to 255 visible ASCII characters. */
export const idempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, "Idempotency-Key: 1 to 255 visible ASCII characters");
