import { createHash } from "node:crypto";
import { DomainError, type ErrorCode, type ErrorDetail, fail } from "@funil/errors";
import { isUniqueViolation, type Sql, type TransactionSql } from "./client.js";

/**
 * Idempotency-Key (docs/api/conventions.md §Idempotency-Key), shared by every
 * service that creates or changes things under a key. The key row lives in the
 * owning service's database (table idempotency_keys, core migration), and is
 * claimed in the same transaction as the work it guards: either both commit
 * or neither does, so "created exactly once" is decided by the database.
 */

/**
 * What a key remembers: the result as the API shows it, or the failure. No
 * HTTP here: the gateway answers a replay exactly as it answered the first.
 */
export type Remembered =
  | { ok: unknown }
  | { error: { code: ErrorCode; message: string; details?: ErrorDetail[] } };

export interface IdempotencyRequest {
  workspaceId: string;
  key: string;
  /** What makes two requests "the same" (see requestFingerprint). */
  fingerprint: string;
}

export type IdempotentResult<T> = { replayed: false; value: T } | { replayed: true; ok: unknown };

export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Which failures a key remembers (docs/api/conventions.md §Idempotency-Key): every 4xx but 400
 * validation_failed (nothing was attempted) and 409 idempotency_key_in_use;
 * a 5xx, or any error that is not a domain error, is not remembered, so the
 * request can be retried.
 */
export function rememberedFailure(err: unknown): Remembered | undefined {
  if (!(err instanceof DomainError)) return undefined;
  if (err.status >= 500 || err.code === "validation_failed" || err.code === "idempotency_key_in_use")
    return undefined;
  return {
    error: err.details
      ? { code: err.code, message: err.message, details: err.details }
      : { code: err.code, message: err.message },
  };
}

/** A remembered failure, thrown again on replay. */
function replayedFailure(error: { code: ErrorCode; message: string; details?: ErrorDetail[] }) {
  const err = fail(error.code, error.message, error.details);
  err.replayed = true;
  return err;
}

type KeyRow = { fingerprint: string; status: string; responseBody: Remembered };

/** A completed key's answer to a request: its result replayed, its failure thrown again, or reused. */
function answerOf(row: KeyRow, req: IdempotencyRequest): { replayed: true; ok: unknown } {
  if (row.fingerprint !== req.fingerprint)
    throw fail(
      "idempotency_key_reused",
      "this Idempotency-Key was already used for a request with another method, path or body",
    );
  if ("error" in row.responseBody) throw replayedFailure(row.responseBody.error);
  return { replayed: true, ok: row.responseBody.ok };
}

/**
 * What a key already answers, read outside any transaction, before work that must call out first (a
 * booking asks crm about its contact): the remembered result ({replayed: true, ok}), the remembered
 * failure thrown again, idempotency_key_reused; undefined when the key is free (never used, expired, or
 * claimed by a transaction that has not committed: withIdempotency decides then).
 */
export async function rememberedAnswer(
  sql: Sql,
  req: IdempotencyRequest,
  opts: { now: Date; retentionMs?: number },
): Promise<{ replayed: true; ok: unknown } | undefined> {
  const cutoff = new Date(opts.now.getTime() - (opts.retentionMs ?? IDEMPOTENCY_RETENTION_MS));
  const [row] = await sql<KeyRow[]>`
    select fingerprint, status, response_body from idempotency_keys
    where workspace_id = ${req.workspaceId} and key = ${req.key} and status = 'completed'
      and created_at >= ${cutoff}`;
  return row ? answerOf(row, req) : undefined;
}

export interface IdempotencyOptions<T> {
  now: Date;
  retentionMs?: number;
  /** The result as the API shows it, remembered for a replay. */
  encode: (value: T) => unknown;
}

/**
 * Runs `work` at most once per (workspace, key):
 * - first request: claims the key, runs the work in the same transaction and
 *   stores its response (success or a remembered failure) before committing;
 * - same key and fingerprint later, within the retention: the remembered
 *   result ({replayed: true, ok}), or the remembered failure thrown again
 *   with `replayed` set;
 * - same key, another fingerprint: idempotency_key_reused;
 * - same key while the first request's transaction is open:
 *   idempotency_key_in_use (no waiting).
 * A transaction-scoped advisory lock on the key tells "in flight" apart
 * without blocking; the primary key of idempotency_keys is the final guard.
 */
export async function withIdempotency<T>(
  sql: Sql,
  req: IdempotencyRequest,
  opts: IdempotencyOptions<T>,
  work: (tx: TransactionSql) => Promise<T>,
): Promise<IdempotentResult<T>> {
  const cutoff = new Date(opts.now.getTime() - (opts.retentionMs ?? IDEMPOTENCY_RETENTION_MS));
  type Outcome = IdempotentResult<T> | { failed: unknown };
  let outcome: Outcome;
  try {
    outcome = await sql.begin(async (tx): Promise<Outcome> => {
      const [lock] = await tx<{ locked: boolean }[]>`
        select pg_try_advisory_xact_lock(hashtextextended(${`idem:${req.workspaceId}:${req.key}`}, 0)) as locked`;
      if (!lock?.locked) throw idempotencyKeyInUse();
      // A row older than the retention is as good as absent: take it over.
      const claimed = await tx`
        insert into idempotency_keys (workspace_id, key, fingerprint, status, created_at)
        values (${req.workspaceId}, ${req.key}, ${req.fingerprint}, 'in_flight', ${opts.now})
        on conflict (workspace_id, key) do update
          set fingerprint = excluded.fingerprint, status = 'in_flight',
              response_body = null, created_at = excluded.created_at
          where idempotency_keys.created_at < ${cutoff}
        returning 1`;
      if (claimed.length === 0) {
        const [row] = await tx<KeyRow[]>`
          select fingerprint, status, response_body from idempotency_keys
          where workspace_id = ${req.workspaceId} and key = ${req.key}`;
        if (row?.status !== "completed") throw idempotencyKeyInUse();
        return answerOf(row, req);
      }
      let result: { value: T } | { failed: unknown; remembered: Remembered };
      try {
        result = { value: (await tx.savepoint((sp) => work(sp))) as T };
      } catch (err) {
        const remembered = rememberedFailure(err);
        if (!remembered) throw err;
        result = { failed: err, remembered };
      }
      const stored: Remembered = "value" in result ? { ok: opts.encode(result.value) } : result.remembered;
      await tx`
        update idempotency_keys
        set status = 'completed', response_body = ${tx.json(stored as never)}
        where workspace_id = ${req.workspaceId} and key = ${req.key}`;
      return "value" in result ? { replayed: false, value: result.value } : { failed: result.failed };
    });
  } catch (err) {
    // Two first requests that slipped past each other: the primary key decided.
    if (isUniqueViolation(err, "idempotency_keys_pkey")) throw idempotencyKeyInUse();
    throw err;
  }
  if ("failed" in outcome) throw outcome.failed;
  return outcome;
}

/**
 * Runs `work` in the caller's transaction when it holds one (the one that
 * claimed an Idempotency-Key), in a savepoint so a store can retry a failed
 * statement; else in a transaction of its own.
 */
export function inTransaction<T>(
  sql: Sql,
  outer: TransactionSql | undefined,
  work: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  return (outer ? outer.savepoint(work) : sql.begin(work)) as Promise<T>;
}

/** 409: another request with this key is in flight. */
export function idempotencyKeyInUse() {
  return fail(
    "idempotency_key_in_use",
    "a request with this Idempotency-Key is still being processed; retry later",
  );
}

/** Deletes the keys older than the retention; returns how many. */
export async function deleteExpiredIdempotencyKeys(
  sql: Sql,
  now: Date,
  retentionMs = IDEMPOTENCY_RETENTION_MS,
) {
  const rows = await sql`
    delete from idempotency_keys where created_at < ${new Date(now.getTime() - retentionMs)} returning 1`;
  return rows.length;
}

/** JSON with object keys sorted at every depth, so equal bodies have equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/**
 * The fingerprint of a request: sha256 of the operation and its canonical
 * input, so a key reused for another operation or another body is told apart
 * and key order never matters.
 */
export function requestFingerprint(operation: string, input: unknown): string {
  return createHash("sha256")
    .update(`${operation}\n${canonicalJson(input ?? null)}`)
    .digest("hex");
}

/**
 * Replaces the remembered answers of a workspace that contain any of `patterns` (jsonb containment of the
 * stored `{ok: …}`) by a remembered `failure`: a replay then answers that failure, shows nothing of
 * what an erasure removed, and does not run the request again. Returns how many were replaced.
 */
export async function forgetAnswers(
  tx: TransactionSql,
  workspaceId: string,
  patterns: Array<{ ok: unknown }>,
  failure: { code: ErrorCode; message: string },
): Promise<number> {
  if (patterns.length === 0) return 0;
  const rows = await tx`
    update idempotency_keys set response_body = ${tx.json({ error: failure } as never)}
    where workspace_id = ${workspaceId} and status = 'completed'
      and exists (select 1 from jsonb_array_elements(${tx.json(patterns as never)}) p where response_body @> p)
    returning 1`;
  return rows.length;
}
