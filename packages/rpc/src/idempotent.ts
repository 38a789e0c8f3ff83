import {
  create,
  type DescMessage,
  fromJson,
  type JsonValue,
  type MessageInitShape,
  toJson,
} from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import {
  type IdempotencyRequest,
  rememberedAnswer,
  requestFingerprint,
  type Sql,
  type TransactionSql,
  withIdempotency,
} from "@funil/db";
import { check, idempotencyKey, z } from "@funil/schemas";
import { REPLAYED_HEADER } from "./errors.js";

/**
 * The service side of Idempotency-Key (docs/api/conventions.md §Idempotency-Key),
 * the one shape every write handler that accepts a key uses: the key is
 * checked, a completed key answers at once, and otherwise the write runs in
 * the transaction that claims the key, so both commit or neither does.
 */

const keyHeader = z.object({ "idempotency-key": idempotencyKey });

/** How a response is remembered under a key, and read back for a replay. */
export interface Remember<R> {
  encode(response: R): unknown;
  decode(remembered: unknown): R;
}

/** Remembers a response (a handler's reply, message or plain init) as its message's JSON. */
export const asMessageJson = <S extends DescMessage>(schema: S): Remember<MessageInitShape<S>> => ({
  encode: (response) => toJson(schema, create(schema, response)),
  decode: (remembered) => fromJson(schema, remembered as JsonValue),
});

export interface IdempotentCall<R> {
  sql: Sql;
  workspaceId: string;
  /** The caller's Idempotency-Key as the gateway forwarded it; undefined when none was sent. */
  key: string | undefined;
  /** The operation and its input (no workspace, no key): the same key for another one is reused. */
  operation: string;
  input: unknown;
  now: Date;
  remember: Remember<R>;
}

/**
 * The call of one write request: its workspace and Idempotency-Key (if it sent one), the operation and
 * its input as the key's fingerprint, the time, and how its answer is remembered.
 */
export function keyedCall<R>(
  sql: Sql,
  req: { workspaceId: string; idempotencyKey?: string | undefined },
  operation: string,
  input: unknown,
  now: Date,
  remember: Remember<R>,
): IdempotentCall<R> {
  return { sql, workspaceId: req.workspaceId, key: req.idempotencyKey, operation, input, now, remember };
}

function keyed(call: IdempotentCall<unknown>): IdempotencyRequest | undefined {
  if (call.key === undefined) return undefined;
  const { "idempotency-key": key } = check(keyHeader, { "idempotency-key": call.key }, "headers");
  return { workspaceId: call.workspaceId, key, fingerprint: requestFingerprint(call.operation, call.input) };
}

function replayed<R>(ctx: HandlerContext, call: IdempotentCall<R>, ok: unknown): R {
  ctx.responseHeader.set(REPLAYED_HEADER, "true");
  return call.remember.decode(ok);
}

/**
 * The remembered answer of a completed key, before any check of the request
 * runs again (a remembered failure is thrown again, another input under the
 * key is idempotency_key_reused); undefined when the request is to run.
 */
export async function replayOf<R>(ctx: HandlerContext, call: IdempotentCall<R>): Promise<R | undefined> {
  const request = keyed(call);
  if (!request) return undefined;
  const found = await rememberedAnswer(call.sql, request, { now: call.now });
  return found && replayed(ctx, call, found.ok);
}

/**
 * Runs the write: without a key in a transaction the store opens itself
 * (`tx` undefined), with one inside the transaction that claims the key. A
 * request that raced another with the same key gets its replay or
 * idempotency_key_in_use. Redis and RPC calls stay outside `work`: no call
 * leaves the process while the transaction is open.
 */
export async function runOnce<R>(
  ctx: HandlerContext,
  call: IdempotentCall<R>,
  work: (tx?: TransactionSql) => Promise<R>,
): Promise<R> {
  const request = keyed(call);
  if (!request) return work(undefined);
  const result = await withIdempotency(
    call.sql,
    request,
    { now: call.now, encode: call.remember.encode },
    (tx) => work(tx),
  );
  return result.replayed ? replayed(ctx, call, result.ok) : result.value;
}

/** replayOf, then runOnce: for a write with nothing to do between the two. */
export async function idempotent<R>(
  ctx: HandlerContext,
  call: IdempotentCall<R>,
  work: (tx?: TransactionSql) => Promise<R>,
): Promise<R> {
  return (await replayOf(ctx, call)) ?? runOnce(ctx, call, work);
}
