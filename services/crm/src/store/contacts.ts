import {
  coalescedReads,
  type EmitChange,
  forgetAnswers,
  inTransaction,
  isUniqueViolation,
  newId,
  type Origin,
  pageLimit,
  type Sql,
  type TransactionSql,
} from "@funil/db";
import { fail } from "@funil/errors";
import {
  applyPatch,
  type ContactChanges,
  type ContactRecord,
  type ContactState,
  emailKey,
  emptyContact,
  fillForUpsert,
  fold,
  phoneDigits,
  sameState,
  searchText,
} from "../contacts.js";
import { checkReferences } from "./references.js";

/** Emits a domain event inside the transaction of the change (outbox). */
export type EmitContactEvent = EmitChange<"contact.created" | "contact.updated", ContactRecord>;

/** What an erasure did in crm (docs/api/contacts.md §POST /contacts/{id}/erase). */
export interface ErasureRecord {
  workspaceId: string;
  id: string;
  erasedAt: Date;
  notesDeleted: number;
  tasksCleared: number;
  opportunitiesKept: number;
}

/** Emits contact.erased inside the erasure's transaction (outbox). */
export type EmitErasure = EmitChange<"contact.erased", ErasureRecord>;

/** The fields an erasure empties (emptyContact), as the audit names them. */
const ERASED_FIELDS = Object.keys(emptyContact());

/** The remembered answers under an Idempotency-Key that carry an erased contact's data. */
const answersAbout = (id: string) => [
  { ok: { contact: { id } } },
  { ok: { id } },
  { ok: { note: { contactId: id } } },
  { ok: { task: { contactId: id } } },
];

export interface ContactFilters {
  query?: string;
  email?: string;
  phone?: string;
  tag?: string;
  status: "active" | "archived";
  createdAfter?: Date;
  updatedAfter?: Date;
}

const columns = (sql: Sql | TransactionSql) => sql`
  id, workspace_id, name, phone, email, company, company_id, role, cpf, notes, tags, status,
  owner_user_id, origin, custom_fields, url, utm, created_at, updated_at`;

function stateColumns(sql: Sql | TransactionSql, s: ContactState) {
  return {
    name: s.name,
    phone: s.phone,
    phone_digits: phoneDigits(s.phone),
    email: s.email,
    email_lower: emailKey(s.email),
    company: s.company,
    company_id: s.companyId,
    role: s.role,
    cpf: s.cpf,
    notes: s.notes,
    tags: s.tags,
    owner_user_id: s.ownerUserId,
    origin: s.origin,
    custom_fields: sql.json(s.customFields as never),
    url: s.url,
    utm: sql.json(s.utm as never),
    search: searchText(s),
  };
}

const MAX_ATTEMPTS = 5;

/**
 * The owner a write gives a contact must be a member of the workspace (422 invalid_reference, as deals
 * answer); an owner the contact already has is not checked again, so an old row stays writable.
 */
async function checkOwner(
  tx: TransactionSql,
  workspaceId: string,
  next: ContactState,
  found?: ContactRecord,
) {
  if (!next.ownerUserId || next.ownerUserId === found?.ownerUserId) return;
  return checkReferences(tx, workspaceId, [{ path: "ownerUserId", kind: "member", id: next.ownerUserId }]);
}

export function contactStore(sql: Sql, emit: EmitContactEvent, emitErasure: EmitErasure) {
  async function lockOne(tx: TransactionSql, where: ReturnType<Sql>) {
    const [row] = await tx<ContactRecord[]>`select ${columns(tx)} from contacts where ${where} for update`;
    return row;
  }

  /** A contact that is not erased: a tombstone is as absent as an id that never existed. */
  const live = (workspaceId: string, id: string): ReturnType<Sql> =>
    sql`workspace_id = ${workspaceId} and id = ${id} and status <> 'erased'`;

  /** A contact by id; the reads of one RPC batch in one statement. */
  const get = coalescedReads<ContactRecord>(sql, {
    async one(workspaceId, id) {
      const [row] = await sql<
        ContactRecord[]
      >`select ${columns(sql)} from contacts where ${live(workspaceId, id)}`;
      return row;
    },
    many: (keys) => sql<ContactRecord[]>`
      select ${columns(sql)} from contacts where (workspace_id, id) in ${keys} and status <> 'erased'`,
  });

  /**
   * GET /contacts' statement (not run): each filter's index in the page's order, (created_at, id) or (updated_at, id)
   * when polling by update (explain.test.ts holds the plans). A search or a tag is planned for its value: how many
   * rows match decides the index.
   */
  function listQuery(workspaceId: string, f: ContactFilters, limit: number, after?: [Date, string]) {
    const orderColumn = f.updatedAfter ? sql`updated_at` : sql`created_at`;
    const conditions = [sql`workspace_id = ${workspaceId}`, sql`status = ${f.status}`];
    if (f.query) conditions.push(sql`search like ${`%${escapeLike(fold(f.query))}%`}`);
    if (f.email) conditions.push(sql`email_lower = ${emailKey(f.email)}`);
    if (f.phone) conditions.push(sql`phone_digits = ${phoneDigits(f.phone) ?? ""}`);
    if (f.tag) conditions.push(sql`tags @> ${[f.tag]}::text[]`);
    if (f.createdAfter) conditions.push(sql`created_at > ${f.createdAfter}`);
    if (f.updatedAfter) conditions.push(sql`updated_at > ${f.updatedAfter}`);
    if (after) conditions.push(sql`(${orderColumn}, id) > (${after[0]}, ${after[1]})`);
    const where = conditions.reduce((acc, c) => sql`${acc} and ${c}`);
    const limitClause = pageLimit(sql, limit, !f.query && !f.tag);
    return sql<ContactRecord[]>`
      select ${columns(sql)} from contacts where ${where} order by ${orderColumn}, id ${limitClause}`;
  }

  return {
    get,

    listQuery,
    /** Keyset page in the order of docs/api/conventions.md §Lists and pagination: the statement, run when awaited. */
    list: listQuery,

    /**
     * Upsert (docs/api/contacts.md §POST /contacts (create or update: upsert)): by phone first, then e-mail, archived contacts
     * included. The unique indexes on phone digits and e-mail decide races:
     * a concurrent insert of the same phone makes this attempt fail with a
     * unique violation, and the retry finds and fills the winner's row.
     */
    async upsert(workspaceId: string, input: ContactChanges, now: Date, by: Origin, outer?: TransactionSql) {
      const digits = phoneDigits(input.phone);
      const email = emailKey(input.email);
      for (let attempt = 1; ; attempt++) {
        try {
          return await inTransaction(sql, outer, async (tx) => {
            const byPhone = digits
              ? await lockOne(tx, sql`workspace_id = ${workspaceId} and phone_digits = ${digits}`)
              : undefined;
            const found =
              byPhone ??
              (email
                ? await lockOne(tx, sql`workspace_id = ${workspaceId} and email_lower = ${email}`)
                : undefined);
            if (found) {
              let dropEmail = false;
              if (byPhone && email && emailKey(found.email) !== email) {
                const [other] = await tx`
                  select 1 from contacts where workspace_id = ${workspaceId} and email_lower = ${email} and id <> ${found.id}`;
                dropEmail = other !== undefined;
              }
              const next = fillForUpsert(found, input, { dropEmail });
              if (sameState(found, next)) return { contact: found, created: false };
              await checkOwner(tx, workspaceId, next, found);
              const [row] = await tx<ContactRecord[]>`
                update contacts set ${tx(stateColumns(tx, next))}, updated_at = ${now}
                where id = ${found.id} returning ${columns(tx)}`;
              await emit(tx, "contact.updated", row!, by, found);
              return { contact: row!, created: false };
            }
            const state = fillForUpsert(emptyContact(), input, { dropEmail: false });
            await checkOwner(tx, workspaceId, state);
            const [row] = await tx<ContactRecord[]>`
              insert into contacts ${tx({
                id: newId("ct", now.getTime()),
                workspace_id: workspaceId,
                ...stateColumns(tx, state),
                status: "active",
                created_at: now,
                updated_at: now,
              })} returning ${columns(tx)}`;
            await emit(tx, "contact.created", row!, by);
            return { contact: row!, created: true };
          });
        } catch (err) {
          if (isUniqueViolation(err) && attempt < MAX_ATTEMPTS) continue;
          throw err;
        }
      }
    },

    /** PATCH: a phone or e-mail that another contact has is a 409 contact_conflict. */
    async update(workspaceId: string, id: string, patch: ContactChanges, now: Date, by: Origin) {
      try {
        return await sql.begin(async (tx) => {
          const found = await lockOne(tx, live(workspaceId, id));
          if (!found) return undefined;
          const next = applyPatch(found, patch);
          if (sameState(found, next)) return found;
          await checkOwner(tx, workspaceId, next, found);
          const [row] = await tx<ContactRecord[]>`
            update contacts set ${tx(stateColumns(tx, next))}, updated_at = ${now}
            where id = ${found.id} returning ${columns(tx)}`;
          await emit(tx, "contact.updated", row!, by, found);
          return row!;
        });
      } catch (err) {
        if (isUniqueViolation(err, "contacts_phone_unique"))
          throw fail("contact_conflict", "another contact already has this phone");
        if (isUniqueViolation(err, "contacts_email_unique"))
          throw fail("contact_conflict", "another contact already has this e-mail");
        throw err;
      }
    },

    /** Archive and unarchive: idempotent; only a real change moves updatedAt and emits. */
    async setStatus(
      workspaceId: string,
      id: string,
      status: "active" | "archived",
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ) {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lockOne(tx, live(workspaceId, id));
        if (!found || found.status === status) return found;
        const [row] = await tx<ContactRecord[]>`
          update contacts set status = ${status}, updated_at = ${now} where id = ${id} returning ${columns(tx)}`;
        await emit(tx, "contact.updated", row!, by, found);
        return row!;
      });
    },

    /**
     * docs/api/contacts.md §POST /contacts/{id}/erase: in one transaction the row becomes a tombstone (every personal
     * field emptied, status erased), its notes are deleted, its tasks lose their body, its deals stay
     * (those outside the trash counted), the remembered answers that carry its data are forgotten, and contact.erased is written
     * to the outbox. Undefined when there is no such contact (or it is already erased).
     */
    async erase(
      workspaceId: string,
      id: string,
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ): Promise<ErasureRecord | undefined> {
      return inTransaction(sql, outer, async (tx) => {
        const found = await lockOne(tx, live(workspaceId, id));
        if (!found) return undefined;
        await tx`
          update contacts set ${tx(stateColumns(tx, emptyContact()))}, status = 'erased', updated_at = ${now}
          where id = ${id}`;
        const notes = await tx`
          delete from notes where workspace_id = ${workspaceId} and contact_id = ${id} returning 1`;
        const tasks = await tx`
          update tasks set body = null
          where workspace_id = ${workspaceId} and contact_id = ${id} and body is not null returning 1`;
        const [deals] = await tx<{ count: number }[]>`
          select count(*)::int as count from opportunities
          where workspace_id = ${workspaceId} and contact_id = ${id} and trashed_at is null`;
        await forgetAnswers(tx, workspaceId, answersAbout(id), {
          code: "not_found",
          message: "contact not found",
        });
        const erasure: ErasureRecord = {
          workspaceId,
          id,
          erasedAt: now,
          notesDeleted: notes.length,
          tasksCleared: tasks.length,
          opportunitiesKept: deals!.count,
        };
        // The audit names what was emptied, never what it held.
        await emitErasure(tx, "contact.erased", erasure, by, ERASED_FIELDS);
        return erasure;
      });
    },
  };
}
export type ContactStore = ReturnType<typeof contactStore>;

function escapeLike(text: string) {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
