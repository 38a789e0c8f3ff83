import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import {
  type Contact,
  type ContactFields,
  ContactFieldsSchema,
  ContactSchema,
  type ContactService,
  EraseContactResponseSchema,
  ListContactsRequestSchema,
  ListContactsResponseSchema,
  UpsertContactResponseSchema,
} from "@funil/contracts";
import { type FiltersOf, getById, originOf, type Sql } from "@funil/db";
import { invalid, notFound } from "@funil/errors";
import {
  asMessageJson,
  idempotent,
  keyedCall,
  plainOf,
  type Remember,
  replayOf,
  rowList,
  runOnce,
} from "@funil/rpc";
import {
  check,
  idParam,
  instant,
  listContactsQuery,
  patchContactBody,
  upsertContactBody,
  type z,
} from "@funil/schemas";
import { type ContactChanges, type ContactRecord, emailKey, phoneDigits } from "../contacts.js";
import type { ContactStore } from "../store/contacts.js";
import type { CustomFieldStore } from "../store/custom-fields.js";
import { customFieldsGuard } from "./custom-fields.js";
import { contactWire, erasureToProto } from "./wire.js";

const LIST = "contacts";

/** The filters a contacts cursor is bound to: the query's, archived or not said. */
const bind = (given: FiltersOf<typeof listContactsQuery>) => ({ ...given, status: given.status ?? "active" });
type Bound = ReturnType<typeof bind>;

const reply = (r: ContactRecord) => ({ contact: contactWire.proto(r) });

/** A checked body as the domain's changes: the same keys, null meaning "clear". */
const changesOf = (body: z.output<typeof patchContactBody>): ContactChanges => body as ContactChanges;

const rememberUpsert = asMessageJson(UpsertContactResponseSchema);
const rememberErasure = asMessageJson(EraseContactResponseSchema);
/** Archive and unarchive answer the contact alone. */
const rememberContact: Remember<{ contact: Contact }> = {
  encode: (r) => toJson(ContactSchema, r.contact),
  decode: (remembered) => ({ contact: fromJson(ContactSchema, remembered as JsonValue) }),
};

export function contactService(deps: {
  sql: Sql;
  contacts: ContactStore;
  customFields: CustomFieldStore;
  clock: Clock;
}): ServiceImpl<typeof ContactService> {
  const { contacts, clock } = deps;
  const checkCustomFields = customFieldsGuard(deps.customFields);
  const fieldsOf = (req: { fields?: ContactFields }) =>
    plainOf(ContactFieldsSchema, req.fields ?? create(ContactFieldsSchema));
  const statement = (workspaceId: string, bound: Bound, take: number, after?: [Date, string]) =>
    contacts.list(
      workspaceId,
      { ...bound, createdAfter: instant(bound.createdAfter), updatedAfter: instant(bound.updatedAfter) },
      take,
      after,
    );
  // Pages are written from the statement's raw rows (row-pages.ts); the object path stays for the rest.
  const list = rowList({
    list: LIST,
    query: listContactsQuery,
    defaultLimit: 50,
    bind,
    sortKey: (c: ContactRecord, bound) => (bound.updatedAfter ? c.updatedAt : c.createdAt),
    sortColumn: (bound) => (bound.updatedAfter ? "updatedAt" : "createdAt"),
    response: ListContactsResponseSchema,
    statement,
    toMessage: (r) => contactWire.proto(r),
  });

  /** Archive and unarchive, each at most once per Idempotency-Key. */
  async function setStatus(
    req: { workspaceId: string; id: string; idempotencyKey?: string },
    ctx: HandlerContext,
    status: "active" | "archived",
  ) {
    const { id } = check(idParam, { id: req.id }, "path");
    const call = keyedCall(
      deps.sql,
      req,
      status === "archived" ? "ArchiveContact" : "UnarchiveContact",
      { id },
      clock.now(),
      rememberContact,
    );
    return idempotent(ctx, call, async (tx) => {
      const row = await contacts.setStatus(
        req.workspaceId,
        id,
        status,
        call.now,
        originOf(ctx.requestHeader),
        tx,
      );
      if (!row) throw notFound("contact");
      return reply(row);
    });
  }

  return {
    listContacts: (req) => list(req.workspaceId, plainOf(ListContactsRequestSchema, req)),

    getContact: getById("contact", contacts.get, reply),

    async upsertContact(req, ctx) {
      const plain = fieldsOf(req);
      const changes = changesOf(check(upsertContactBody, plain, "body"));
      // An upsert erases nothing: a null is the same as an absent field.
      for (const key of Object.keys(changes) as Array<keyof ContactChanges>)
        if (changes[key] === null) delete changes[key];
      if (!phoneDigits(changes.phone) && !emailKey(changes.email))
        throw invalid([{ path: "body.phone", message: "phone or email is required" }], "body");
      const call = keyedCall(deps.sql, req, "UpsertContact", plain, clock.now(), rememberUpsert);
      const replay = await replayOf(ctx, call);
      if (replay) return replay;
      await checkCustomFields(req.workspaceId, "contact", changes.customFields);
      return runOnce(ctx, call, async (tx) => {
        const by = originOf(ctx.requestHeader);
        const { contact, created } = await contacts.upsert(req.workspaceId, changes, call.now, by, tx);
        return { ...reply(contact), created };
      });
    },

    async updateContact(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const changes = changesOf(check(patchContactBody, fieldsOf(req), "body"));
      await checkCustomFields(req.workspaceId, "contact", changes.customFields);
      const row = await contacts.update(
        req.workspaceId,
        id,
        changes,
        clock.now(),
        originOf(ctx.requestHeader),
      );
      if (!row) throw notFound("contact");
      return reply(row);
    },

    async archiveContact(req, ctx) {
      return setStatus(req, ctx, "archived");
    },

    async unarchiveContact(req, ctx) {
      return setStatus(req, ctx, "active");
    },

    /** docs/api/contacts.md §POST /contacts/{id}/erase: an erased contact is not found, a second erase included. */
    async eraseContact(req, ctx) {
      const { id } = check(idParam, { id: req.id }, "path");
      const call = keyedCall(deps.sql, req, "EraseContact", { id }, clock.now(), rememberErasure);
      return idempotent(ctx, call, async (tx) => {
        const erasure = await contacts.erase(req.workspaceId, id, call.now, originOf(ctx.requestHeader), tx);
        if (!erasure) throw notFound("contact");
        return erasureToProto(erasure);
      });
    },
  };
}
