import { z } from "zod";
import { cursor, customFieldsInput, limit, page, text, timestamp } from "./common.js";

const nullableString = z.string().nullable();

export const contact = z
  .object({
    id: z.string(),
    name: nullableString,
    phone: nullableString,
    email: nullableString,
    company: nullableString,
    companyId: nullableString,
    role: nullableString,
    cpf: nullableString,
    notes: nullableString,
    tags: z.array(z.string()),
    status: z.enum(["active", "archived"]),
    ownerUserId: nullableString,
    origin: nullableString,
    customFields: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
    updatedAt: z.string(),
    url: nullableString,
    utm: z.object({
      source: nullableString,
      medium: nullableString,
      campaign: nullableString,
      term: nullableString,
      content: nullableString,
    }),
  })
  .meta({ id: "Contact" });

/** The single read adds the human touches (SPEC.md §2 Contact): never in the list. */
export const contactDetail = contact
  .extend({ firstHumanTouchAt: z.string().nullable(), lastHumanTouchAt: z.string().nullable() })
  .meta({ id: "ContactDetail" });

export const contactList = page(contact);

export const listContactsQuery = z.object({
  query: z.string().min(1).max(200).optional(),
  email: z.string().min(3).max(200).optional(),
  phone: z.string().min(3).max(40).optional(),
  tag: z.string().min(1).max(60).optional(),
  status: z.enum(["active", "archived"]).optional(),
  createdAfter: timestamp.optional(),
  updatedAfter: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(50),
});

const tag = z.string().min(1, "tags cannot be empty").max(60, "a tag has at most 60 characters");
const utm = z.strictObject({
  source: text(200).nullable().optional(),
  medium: text(200).nullable().optional(),
  campaign: text(200).nullable().optional(),
  term: text(200).nullable().optional(),
  content: text(200).nullable().optional(),
});

const writable = {
  name: text(200).nullable().optional(),
  phone: text(40).nullable().optional(),
  email: text(200).nullable().optional(),
  company: text(200).nullable().optional(),
  companyId: text(100).nullable().optional(),
  role: text(200).nullable().optional(),
  cpf: text(20).nullable().optional(),
  notes: text(10_000).nullable().optional(),
  tags: z.array(tag).max(100, "at most 100 tags").nullable().optional(),
  ownerUserId: text(100).nullable().optional(),
  origin: text(200).nullable().optional(),
  customFields: customFieldsInput.nullable().optional(),
  url: text(2048).nullable().optional(),
  utm: utm.nullable().optional(),
};

/** Upsert body: any contact field but id, status and timestamps (those are a 400). */
export const upsertContactBody = z.strictObject(writable).meta({ id: "ContactUpsert" });
export const patchContactBody = z.strictObject(writable).meta({ id: "ContactPatch" });
