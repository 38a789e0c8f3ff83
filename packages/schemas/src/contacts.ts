import { z } from "zod";
import { cursor, customFieldsInput, limit, tags, text, timestamp, utmPatch } from "./common.js";

export const contactStatus = z.enum(["active", "archived"]);

export const listContactsQuery = z.strictObject({
  query: z.string().min(1).max(200).optional(),
  email: z.string().min(3).max(200).optional(),
  phone: z.string().min(3).max(40).optional(),
  tag: z.string().min(1).max(60).optional(),
  status: contactStatus.optional(),
  createdAfter: timestamp.optional(),
  updatedAfter: timestamp.optional(),
  cursor: cursor.optional(),
  limit: limit(50),
});

const blank = (v: string) => v.trim() === "";
/** A phone is compared by its digits: it needs 3 to 20 of them (an empty value means none). */
const phone = text(40).refine((v) => {
  if (blank(v)) return true;
  const digits = v.replace(/\D/g, "").length;
  return digits >= 3 && digits <= 20;
}, "phone must have 3 to 20 digits");
const email = text(200).refine(
  (v) => blank(v) || /^[^\s@]+@[^\s@]+$/.test(v.trim()),
  "email is not an e-mail address",
);

const writable = {
  name: text(200).nullable().optional(),
  phone: phone.nullable().optional(),
  email: email.nullable().optional(),
  company: text(200).nullable().optional(),
  companyId: text(100).nullable().optional(),
  role: text(200).nullable().optional(),
  cpf: text(20).nullable().optional(),
  notes: text(10_000).nullable().optional(),
  tags: tags.nullable().optional(),
  ownerUserId: text(100).nullable().optional(),
  origin: text(200).nullable().optional(),
  customFields: customFieldsInput.nullable().optional(),
  url: text(2048).nullable().optional(),
  utm: utmPatch.nullable().optional(),
};

/** Upsert body: any contact field but id, status and timestamps (those are a 400); nulls erase nothing. */
export const upsertContactBody = z.strictObject(writable).meta({ id: "ContactUpsert" });
/** PATCH body: absent = untouched, null = cleared. */
export const patchContactBody = z.strictObject(writable).meta({ id: "ContactPatch" });
