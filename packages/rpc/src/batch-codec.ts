import { BatchService, CallRequestSchema, CallResponseSchema } from "@funil/contracts";
import { codecOf } from "./codec.js";

/** The path of BatchService.Call, which both ends of the lean unary path special-case. */
export const BATCH_PATH = `/${BatchService.typeName}/${BatchService.method.call.name}`;

/**
 * The BatchService's envelope (proto/funil/rpc/v1/batch.proto), made and read on every batch at both
 * ends, through the generated codec (codec.ts: no reflection on a path every call takes).
 * batch-codec.test.ts holds both ways equal to protobuf-es's encoding.
 */
export interface BatchCallWire {
  path: string;
  input: Uint8Array;
  /** 0 = none. */
  timeoutMs: number;
  headers: Record<string, string>;
}

export interface BatchResultWire {
  status: number;
  body: Uint8Array;
  headers: Record<string, string>;
}

const request = codecOf(CallRequestSchema);
const response = codecOf(CallResponseSchema);

export const encodeBatchRequest = (calls: BatchCallWire[]): Uint8Array =>
  request.encode({ calls } as Parameters<typeof request.encode>[0]);

export const encodeBatchResponse = (results: BatchResultWire[]): Uint8Array =>
  response.encode({ results } as Parameters<typeof response.encode>[0]);

/** The calls of a batch; throws on bytes that are not a CallRequest. */
export const decodeBatchRequest = (bytes: Uint8Array): BatchCallWire[] => request.decode(bytes).calls;

/** The results of a batch; throws on bytes that are not a CallResponse. */
export const decodeBatchResponse = (bytes: Uint8Array): BatchResultWire[] => response.decode(bytes).results;
