import {
  coalescedReads,
  type EmitChange,
  inTransaction,
  newId,
  type Origin,
  pageLimit,
  type Sql,
  type TransactionSql,
} from "@funil/db";
import { invalidReference, notFound } from "@funil/errors";
import {
  applyDealPatch,
  type DealChanges,
  type DealEventType,
  type DealInput,
  type DealRecord,
  type DealState,
  type DealStatus,
  newDeal,
} from "../deals.js";
import type { PipelineStore } from "./pipelines.js";
import { checkReferences, mapWriteError, type Reference } from "./references.js";

/** Emits a domain event inside the transaction of the change (outbox). */
export type EmitDealEvent = EmitChange<DealEventType, DealRecord>;

/** Filters of GET /opportunities (docs/api/deals.md §GET /opportunities): every *After is >, every *Before is <. */
export interface DealFilters {
  pipelineId?: string;
  stageId?: string;
  status?: DealStatus;
  contactId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  updatedBefore?: Date;
  wonAfter?: Date;
  wonBefore?: Date;
  lostAfter?: Date;
  lostBefore?: Date;
  stageChangedAfter?: Date;
}

type Db = Sql | TransactionSql;

const columns = (sql: Db) => sql`
  id, workspace_id, title, pipeline_id, stage_id, contact_id, status, value_cents::text as value_cents,
  currency, owner_user_id, temperature, tags, loss_reason, expected_close_at, won_at, lost_at, custom_fields,
  source, utm, origin, url, stage_changed_at, created_at, updated_at, trashed_at`;

type Row = Omit<DealRecord, "valueCents"> & { valueCents: string };
/** bigint comes back as text; values are bounded to safe integers on the way in. */
const toRecord = (row: Row): DealRecord => ({ ...row, valueCents: Number(row.valueCents) });

function stateColumns(sql: Db, s: DealState) {
  return {
    title: s.title,
    pipeline_id: s.pipelineId,
    stage_id: s.stageId,
    contact_id: s.contactId,
    status: s.status,
    value_cents: s.valueCents,
    currency: s.currency,
    owner_user_id: s.ownerUserId,
    temperature: s.temperature,
    tags: s.tags,
    loss_reason: s.lossReason,
    expected_close_at: s.expectedCloseAt,
    won_at: s.wonAt,
    lost_at: s.lostAt,
    custom_fields: sql.json(s.customFields as never),
    source: s.source,
    utm: sql.json(s.utm as never),
    origin: s.origin,
    url: s.url,
    stage_changed_at: s.stageChangedAt,
  };
}

/** What trashing and restoring change: the deal's trash mark, which the API does not show as a field. */
const TRASHED = ["trashedAt"];

export function dealStore(sql: Sql, pipelines: PipelineStore, emit: EmitDealEvent) {
  /** A live (not trashed) deal by id; the reads of one RPC batch in one statement. */
  const getRow = coalescedReads<Row>(sql, {
    async one(workspaceId, id) {
      const [row] = await sql<Row[]>`
        select ${columns(sql)} from opportunities
        where workspace_id = ${workspaceId} and id = ${id} and trashed_at is null`;
      return row;
    },
    many: (keys) => sql<Row[]>`
      select ${columns(sql)} from opportunities
      where (workspace_id, id) in ${keys} and trashed_at is null`,
  });

  async function lockLive(tx: TransactionSql, workspaceId: string, id: string) {
    const [row] = await tx<Row[]>`
      select ${columns(tx)} from opportunities
      where workspace_id = ${workspaceId} and id = ${id} and trashed_at is null for update`;
    return row ? toRecord(row) : undefined;
  }

  /**
   * The keyset page query of GET /opportunities, in the order of docs/api/conventions.md §Lists and pagination:
   * (createdAt, id), or (updatedAt, id) when polling with updatedAfter.
   * Returned unexecuted so that a benchmark can EXPLAIN the very same query.
   */
  function listQuery(workspaceId: string, f: DealFilters, limit: number, after?: [Date, string]) {
    const orderColumn = f.updatedAfter ? sql`updated_at` : sql`created_at`;
    const c = [sql`workspace_id = ${workspaceId}`, sql`trashed_at is null`];
    if (f.pipelineId) c.push(sql`pipeline_id = ${f.pipelineId}`);
    if (f.stageId) c.push(sql`stage_id = ${f.stageId}`);
    if (f.status) c.push(sql`status = ${f.status}`);
    if (f.contactId) c.push(sql`contact_id = ${f.contactId}`);
    if (f.createdAfter) c.push(sql`created_at > ${f.createdAfter}`);
    if (f.createdBefore) c.push(sql`created_at < ${f.createdBefore}`);
    if (f.updatedAfter) c.push(sql`updated_at > ${f.updatedAfter}`);
    if (f.updatedBefore) c.push(sql`updated_at < ${f.updatedBefore}`);
    // wonAt is set only on won deals and lostAt only on lost ones (table checks).
    if (f.wonAfter) c.push(sql`won_at > ${f.wonAfter}`);
    if (f.wonBefore) c.push(sql`won_at < ${f.wonBefore}`);
    if (f.lostAfter) c.push(sql`lost_at > ${f.lostAfter}`);
    if (f.lostBefore) c.push(sql`lost_at < ${f.lostBefore}`);
    if (f.stageChangedAfter) c.push(sql`stage_changed_at > ${f.stageChangedAfter}`);
    if (after) c.push(sql`(${orderColumn}, id) > (${after[0]}, ${after[1]})`);
    const where = c.reduce((acc, x) => sql`${acc} and ${x}`);
    return sql<
      Row[]
    >`select ${columns(sql)} from opportunities where ${where} order by ${orderColumn}, id ${pageLimit(sql, limit)}`;
  }

  /** Creates a deal in the caller's transaction (the Idempotency-Key claim shares it). */
  async function createIn(
    tx: TransactionSql,
    workspaceId: string,
    input: DealInput,
    now: Date,
    by: Origin,
  ): Promise<DealRecord> {
    const refs: Reference[] = [
      { path: "contactId", kind: "contact", id: input.contactId },
      { path: "pipelineId", kind: "pipeline", id: input.pipelineId },
    ];
    if (input.ownerUserId) refs.push({ path: "ownerUserId", kind: "member", id: input.ownerUserId });
    await checkReferences(tx, workspaceId, refs);
    let stageId = input.stageId;
    if (stageId === undefined) {
      stageId = await pipelines.firstStage(tx, workspaceId, input.pipelineId);
      if (!stageId) throw invalidReference([{ path: "pipelineId", message: "the pipeline has no stages" }]);
    } else if (!(await pipelines.stageInPipeline(tx, workspaceId, input.pipelineId, stageId))) {
      throw invalidReference([
        { path: "stageId", message: `no stage ${stageId} in pipeline ${input.pipelineId}` },
      ]);
    }
    const state = newDeal(input, stageId, now);
    try {
      const [row] = await tx<Row[]>`
        insert into opportunities ${tx({
          id: newId("opp", now.getTime()),
          workspace_id: workspaceId,
          ...stateColumns(tx, state),
          created_at: now,
          updated_at: now,
        })} returning ${columns(tx)}`;
      const deal = toRecord(row!);
      await emit(tx, "opportunity.created", deal, by);
      return deal;
    } catch (err) {
      mapWriteError(err);
    }
  }

  return {
    listQuery,
    createIn,

    async list(
      workspaceId: string,
      f: DealFilters,
      limit: number,
      after?: [Date, string],
    ): Promise<DealRecord[]> {
      return (await listQuery(workspaceId, f, limit, after)).map(toRecord);
    },

    /** A live deal; a trashed one is not found. */
    async get(workspaceId: string, id: string): Promise<DealRecord | undefined> {
      const row = await getRow(workspaceId, id);
      return row ? toRecord(row) : undefined;
    },

    /** Create; `outer` is the transaction of an Idempotency-Key, when the request has one. */
    async create(
      workspaceId: string,
      input: DealInput,
      now: Date,
      by: Origin,
      outer?: TransactionSql,
    ): Promise<DealRecord> {
      return inTransaction(sql, outer, (tx) => createIn(tx, workspaceId, input, now, by));
    },

    /** PATCH (docs/api/deals.md §PATCH /opportunities/{id}); a change that changes nothing writes and emits nothing. */
    async update(
      workspaceId: string,
      id: string,
      changes: DealChanges,
      now: Date,
      by: Origin,
    ): Promise<DealRecord> {
      return sql.begin(async (tx) => {
        const found = await lockLive(tx, workspaceId, id);
        if (!found) throw notFound("opportunity");
        if (changes.stageId !== undefined && changes.stageId !== found.stageId) {
          if (!(await pipelines.stageInPipeline(tx, workspaceId, found.pipelineId, changes.stageId)))
            throw invalidReference([
              {
                path: "stageId",
                message: `no stage ${changes.stageId} in the deal's pipeline ${found.pipelineId}`,
              },
            ]);
        }
        if (changes.ownerUserId && changes.ownerUserId !== found.ownerUserId)
          await checkReferences(tx, workspaceId, [
            { path: "ownerUserId", kind: "member", id: changes.ownerUserId },
          ]);
        const { next, events } = applyDealPatch(found, changes, now);
        if (events.length === 0) return found;
        try {
          const [row] = await tx<Row[]>`
            update opportunities set ${tx({ ...stateColumns(tx, next), updated_at: now })}
            where id = ${found.id} returning ${columns(tx)}`;
          const deal = toRecord(row!);
          for (const type of events) await emit(tx, type, deal, by, found);
          return deal;
        } catch (err) {
          mapWriteError(err);
        }
      });
    },

    /** Moves a live deal to the trash; a missing or already trashed deal is not found. */
    async trash(workspaceId: string, id: string, now: Date, by: Origin): Promise<DealRecord> {
      return sql.begin(async (tx) => {
        const [row] = await tx<Row[]>`
          update opportunities set trashed_at = ${now}, updated_at = ${now}
          where workspace_id = ${workspaceId} and id = ${id} and trashed_at is null
          returning ${columns(tx)}`;
        if (!row) throw notFound("opportunity");
        const deal = toRecord(row);
        await emit(tx, "opportunity.trashed", deal, by, TRASHED);
        return deal;
      });
    },

    /** Brings a trashed deal back; restoring a live deal is a no-op that answers it. */
    async restore(workspaceId: string, id: string, now: Date, by: Origin): Promise<DealRecord> {
      return sql.begin(async (tx) => {
        const [current] = await tx<Row[]>`
          select ${columns(tx)} from opportunities where workspace_id = ${workspaceId} and id = ${id} for update`;
        if (!current) throw notFound("opportunity");
        if (!current.trashedAt) return toRecord(current);
        const [row] = await tx<Row[]>`
          update opportunities set trashed_at = null, updated_at = ${now} where id = ${id} returning ${columns(tx)}`;
        const deal = toRecord(row!);
        await emit(tx, "opportunity.restored", deal, by, TRASHED);
        return deal;
      });
    },
  };
}
export type DealStore = ReturnType<typeof dealStore>;
