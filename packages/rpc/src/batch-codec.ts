import {
  BatchService,
  CallRequestSchema,
  CallResponseSchema,
  ChannelRequestSchema,
  ChannelResponseSchema,
} from "@funil/contracts";
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

/** A batch as it travels on the channel: its id and calls, or (answers) its results or its error. */
export interface ChannelRequestWire {
  id: number;
  calls: BatchCallWire[];
}

export interface ChannelResponseWire {
  id: number;
  /** 200: `results`; otherwise the Connect protocol's JSON error in `error`. */
  status: number;
  results: BatchResultWire[];
  error: Uint8Array;
}

const channelRequest = codecOf(ChannelRequestSchema);
const channelResponse = codecOf(ChannelResponseSchema);

/** The most bytes channelRequestOf() adds: the id's tag and a varint of up to 5 bytes. */
export const ID_BYTES = 6;

/**
 * A ChannelRequest from the bytes of a CallRequest: the same calls (field 1), the id (field 2, a varint)
 * appended. Protobuf reads fields in any order, so a batch encoded once (to check its size against the
 * limit) travels as it is.
 */
export function channelRequestOf(callRequest: Uint8Array, id: number): Uint8Array {
  const out = Buffer.allocUnsafe(callRequest.byteLength + ID_BYTES);
  out.set(callRequest, 0);
  let at = callRequest.byteLength;
  out[at++] = (2 << 3) | 0;
  let v = id >>> 0;
  while (v > 0x7f) {
    out[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[at++] = v;
  return out.subarray(0, at);
}

export const encodeChannelRequest = (req: ChannelRequestWire): Uint8Array =>
  channelRequest.encode(req as Parameters<typeof channelRequest.encode>[0]);

export const encodeChannelResponse = (res: Omit<ChannelResponseWire, "error"> & { error?: Uint8Array }) =>
  channelResponse.encode(res as Parameters<typeof channelResponse.encode>[0]);

/** Throws on bytes that are not a ChannelRequest. */
export const decodeChannelRequest = (bytes: Uint8Array): ChannelRequestWire => channelRequest.decode(bytes);

/** Throws on bytes that are not a ChannelResponse. */
export const decodeChannelResponse = (bytes: Uint8Array): ChannelResponseWire =>
  channelResponse.decode(bytes);
