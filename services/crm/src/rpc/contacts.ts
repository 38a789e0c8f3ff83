import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  type Contact,
  type ContactFields,
  ContactSchema,
  type ContactService,
  UtmSchema,
} from "@funil/contracts";
import { type ErrorDetail, invalid, keysetPage, notFound, parseTimestamp } from "@funil/rpc";
import {
  type ContactChanges,
  type ContactRecord,
  emailKey,
  phoneDigits,
  TEXT_FIELDS,
  UTM_KEYS,
} from "../contacts.js";
import { checkCustomFields } from "../custom-fields.js";
import type { ContactStore } from "../store/contacts.js";
import type { CustomFieldStore } from "../store/custom-fields.js";

const orNull = <T>(v: T | null | undefined) => (v === null ? undefined : v);

export function contactToProto(r: ContactRecord): Contact {
  return create(ContactSchema, {
    id: r.id,
    name: orNull(r.name),
    phone: orNull(r.phone),
    email: orNull(r.email),
    company: orNull(r.company),
    companyId: orNull(r.companyId),
    role: orNull(r.role),
    cpf: orNull(r.cpf),
    notes: orNull(r.notes),
    tags: r.tags,
    status: r.status,
    ownerUserId: orNull(r.ownerUserId),
    origin: orNull(r.origin),
    customFields: r.customFields as never,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    url: orNull(r.url),
    utm: create(UtmSchema, r.utm),
  });
}

const CLEARABLE = new Set<string>([...TEXT_FIELDS, "tags", "customFields", "utm"]);

/** The proto's "set / clear / absent" triple as the domain's changes. */
function changesOf(fields: ContactFields | undefined): ContactChanges {
  const changes: ContactChanges = {};
  if (!fields) return changes;
  for (const f of TEXT_FIELDS) if (fields[f] !== undefined) changes[f] = fields[f];
  if (fields.tags) changes.tags = fields.tags.values;
  if (fields.customFields) changes.customFields = fields.customFields;
  if (fields.utm) {
    const utm: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(fields.utm)) {
      if (!(UTM_KEYS as readonly string[]).includes(k) || (v !== null && typeof v !== "string"))
        throw invalid("utm keys are source, medium, campaign, term, content with string values", [
          { path: `utm.${k}`, message: "unknown key or not a string" },
        ]);
      utm[k] = v;
    }
    changes.utm = utm;
  }
  for (const name of fields.clear) {
    if (!CLEARABLE.has(name))
      throw invalid(`field "${name}" cannot be cleared`, [{ path: name, message: "unknown field" }]);
    (changes as Record<string, null>)[name] = null;
  }
  return changes;
}

function checkIdentity(changes: ContactChanges): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (typeof changes.phone === "string" && changes.phone.trim() !== "") {
    const digits = phoneDigits(changes.phone)?.length ?? 0;
    if (digits < 3 || digits > 20)
      problems.push({ path: "phone", message: "phone must have 3 to 20 digits" });
  }
  if (
    typeof changes.email === "string" &&
    changes.email.trim() !== "" &&
    !/^[^\s@]+@[^\s@]+$/.test(changes.email.trim())
  )
    problems.push({ path: "email", message: "email is not an e-mail address" });
  return problems;
}

const LIST = "contacts";

export function contactService(deps: {
  contacts: ContactStore;
  customFields: CustomFieldStore;
  clock: Clock;
}): ServiceImpl<typeof ContactService> {
  const { contacts, customFields, clock } = deps;

  async function validate(workspaceId: string, changes: ContactChanges) {
    const problems = checkIdentity(changes);
    if (changes.customFields) {
      const defs = await customFields.list(workspaceId, "contact");
      problems.push(...checkCustomFields(changes.customFields, defs));
    }
    if (problems.length > 0) throw invalid(problems.map((p) => p.message).join("; "), problems);
  }

  async function mustGet(workspaceId: string, id: string) {
    const row = await contacts.get(workspaceId, id);
    if (!row) throw notFound("contact");
    return row;
  }

  return {
    async listContacts(req) {
      const filters = {
        query: req.query,
        email: req.email,
        phone: req.phone,
        tag: req.tag,
        status: (req.status ?? "active") as "active" | "archived",
        createdAfter: req.createdAfter === undefined ? undefined : parseTimestamp(req.createdAfter),
        updatedAfter: req.updatedAfter === undefined ? undefined : parseTimestamp(req.updatedAfter),
      };
      for (const key of ["createdAfter", "updatedAfter"] as const)
        if (req[key] !== undefined && !filters[key])
          throw invalid(`${key} must be an ISO-8601 timestamp`, [{ path: key, message: "not a timestamp" }]);
      if (filters.status !== "active" && filters.status !== "archived")
        throw invalid("status is active or archived");
      const bound = { ...filters, createdAfter: req.createdAfter, updatedAfter: req.updatedAfter };
      const { rows, nextCursor } = await keysetPage<ContactRecord>({
        list: LIST,
        workspaceId: req.workspaceId,
        filters: bound,
        cursor: req.cursor,
        limit: req.limit,
        defaultLimit: 50,
        sortKey: (c) => (filters.updatedAfter ? c.updatedAt : c.createdAt),
        fetch: (take, after) => contacts.list(req.workspaceId, filters, take, after),
      });
      return { data: rows.map(contactToProto), nextCursor };
    },

    async getContact(req) {
      return { contact: contactToProto(await mustGet(req.workspaceId, req.id)) };
    },

    async upsertContact(req) {
      const changes = changesOf(req.fields);
      for (const key of Object.keys(changes) as Array<keyof ContactChanges>)
        if (changes[key] === null) delete changes[key];
      if (!phoneDigits(changes.phone) && !emailKey(changes.email))
        throw invalid("phone or email is required", [
          { path: "phone", message: "phone or email is required" },
        ]);
      await validate(req.workspaceId, changes);
      const { contact, created } = await contacts.upsert(req.workspaceId, changes, clock.now());
      return { contact: contactToProto(contact), created };
    },

    async updateContact(req) {
      const changes = changesOf(req.fields);
      await validate(req.workspaceId, changes);
      const row = await contacts.update(req.workspaceId, req.id, changes, clock.now());
      if (!row) throw notFound("contact");
      return { contact: contactToProto(row) };
    },

    async archiveContact(req) {
      const row = await contacts.setStatus(req.workspaceId, req.id, "archived", clock.now());
      if (!row) throw notFound("contact");
      return { contact: contactToProto(row) };
    },

    async unarchiveContact(req) {
      const row = await contacts.setStatus(req.workspaceId, req.id, "active", clock.now());
      if (!row) throw notFound("contact");
      return { contact: contactToProto(row) };
    },
  };
}
