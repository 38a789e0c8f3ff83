import { isDeepStrictEqual } from "node:util";
import { mergeCustomFields } from "./custom-fields.js";
import { present } from "./text.js";

/** The writable state of a contact. Empty strings are stored as null. */
export interface ContactState {
  name: string | null;
  phone: string | null;
  email: string | null;
  company: string | null;
  companyId: string | null;
  role: string | null;
  cpf: string | null;
  notes: string | null;
  tags: string[];
  ownerUserId: string | null;
  origin: string | null;
  customFields: Record<string, unknown>;
  url: string | null;
  utm: Partial<Record<UtmKey, string>>;
}

export interface ContactRecord extends ContactState {
  id: string;
  workspaceId: string;
  status: "active" | "archived";
  createdAt: Date;
  updatedAt: Date;
}

export const UTM_KEYS = ["source", "medium", "campaign", "term", "content"] as const;
export type UtmKey = (typeof UTM_KEYS)[number];

export const TEXT_FIELDS = [
  "name",
  "phone",
  "email",
  "company",
  "companyId",
  "role",
  "cpf",
  "notes",
  "ownerUserId",
  "origin",
  "url",
] as const;
export type TextField = (typeof TEXT_FIELDS)[number];

/** What a caller sent: a value, or null for "clear" (PATCH only). Absent keys are untouched. */
export type ContactChanges = Partial<Record<TextField, string | null>> & {
  tags?: string[] | null;
  customFields?: Record<string, unknown> | null;
  utm?: Partial<Record<UtmKey, string | null>> | null;
};

export const emptyContact = (): ContactState => ({
  name: null,
  phone: null,
  email: null,
  company: null,
  companyId: null,
  role: null,
  cpf: null,
  notes: null,
  tags: [],
  ownerUserId: null,
  origin: null,
  customFields: {},
  url: null,
  utm: {},
});

/** Phones are compared by their digits only. */
export const phoneDigits = (phone: string | null | undefined) => {
  const d = (phone ?? "").replace(/\D/g, "");
  return d.length > 0 ? d : null;
};
export const emailKey = (email: string | null | undefined) => (email ? email.trim().toLowerCase() : null);

/** Lower-case and accent-free, so `query` matches "joão" with "JOAO". */
export function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}
export function searchText(c: ContactState): string {
  return fold([c.name, c.email, c.phone, phoneDigits(c.phone), c.company].filter(Boolean).join(" "));
}

function uniqueTags(tags: string[]): string[] {
  return [...new Set(tags)];
}

/**
 * Upsert fill rules (docs/api/contacts.md §POST /contacts (create or update: upsert)): the name only fills an
 * empty name, tags are added (set union), customFields merge key by key, any
 * other field is set when a non-empty value is sent; nothing is ever erased.
 * `dropEmail` leaves the e-mail out when it belongs to another contact.
 */
export function fillForUpsert(
  current: ContactState,
  input: ContactChanges,
  opts: { dropEmail: boolean },
): ContactState {
  const next: ContactState = {
    ...current,
    tags: [...current.tags],
    customFields: { ...current.customFields },
  };
  for (const field of TEXT_FIELDS) {
    const value = input[field];
    if (!present(value)) continue;
    if (field === "name" && present(current.name)) continue;
    if (field === "email" && opts.dropEmail) continue;
    next[field] = value;
  }
  if (input.tags) next.tags = uniqueTags([...current.tags, ...input.tags]);
  if (input.customFields) {
    for (const [k, v] of Object.entries(input.customFields))
      if (v !== null && v !== "") next.customFields[k] = v;
  }
  if (input.utm) {
    next.utm = { ...current.utm };
    for (const k of UTM_KEYS) if (present(input.utm[k])) next.utm[k] = input.utm[k]!;
  }
  return next;
}

/**
 * PATCH rules (docs/api/contacts.md §PATCH /contacts/{id}): an absent field is left
 * untouched, an explicit null clears it; tags are replaced as sent;
 * customFields and utm merge key by key, a null value removing the key.
 */
export function applyPatch(current: ContactState, patch: ContactChanges): ContactState {
  const next: ContactState = { ...current };
  for (const field of TEXT_FIELDS) {
    if (!(field in patch)) continue;
    const value = patch[field];
    next[field] = present(value) ? value : null;
  }
  if ("tags" in patch) next.tags = uniqueTags(patch.tags ?? []);
  if ("customFields" in patch) {
    next.customFields =
      patch.customFields === null ? {} : mergeCustomFields(current.customFields, patch.customFields!);
  }
  if ("utm" in patch) {
    if (patch.utm === null) next.utm = {};
    else {
      const utm: Partial<Record<UtmKey, string>> = { ...current.utm };
      for (const k of UTM_KEYS) {
        if (!(k in patch.utm!)) continue;
        const v = patch.utm![k];
        if (present(v)) utm[k] = v;
        else delete utm[k];
      }
      next.utm = utm;
    }
  }
  return next;
}

export function sameState(a: ContactState, b: ContactState): boolean {
  return isDeepStrictEqual(stateOf(a), stateOf(b));
}

export function stateOf(c: ContactState): ContactState {
  return {
    name: c.name,
    phone: c.phone,
    email: c.email,
    company: c.company,
    companyId: c.companyId,
    role: c.role,
    cpf: c.cpf,
    notes: c.notes,
    tags: c.tags,
    ownerUserId: c.ownerUserId,
    origin: c.origin,
    customFields: c.customFields,
    url: c.url,
    utm: c.utm,
  };
}
