import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  CallRequestSchema,
  CallResponseSchema,
  ChannelRequestSchema,
  ChannelResponseSchema,
} from "@funil/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  channelRequestOf,
  decodeBatchRequest,
  decodeBatchResponse,
  decodeChannelRequest,
  decodeChannelResponse,
  encodeBatchRequest,
  encodeBatchResponse,
  encodeChannelResponse,
} from "./batch-codec.js";
import { plain } from "./test-support.js";

/** The hand-written envelope must be the generated schema's, byte for meaning, both ways. */
const bytes = fc.uint8Array({ maxLength: 64 });
// protobuf-es's own map decoding drops a key called __proto__ (it assigns it): that one key is the test
// below, against our codec alone.
const headerName = fc.string({ maxLength: 12 }).filter((k) => k !== "__proto__");
const headers = fc.dictionary(headerName, fc.string({ maxLength: 24 }), { maxKeys: 3 });
const call = fc.record({
  path: fc.string({ maxLength: 60 }),
  input: bytes,
  timeoutMs: fc.nat({ max: 0xffffffff }),
  headers,
});
const result = fc.record({ status: fc.nat({ max: 599 }), body: bytes, headers });

describe("batch envelope codec (the envelope without reflection)", () => {
  it("encodeBatchRequest reads back through the generated CallRequest, and decodeBatchRequest reads what it writes", () => {
    fc.assert(
      fc.property(fc.array(call, { maxLength: 8 }), (calls) => {
        const generated = fromBinary(CallRequestSchema, encodeBatchRequest(calls));
        expect(
          plain(
            generated.calls.map(({ path, input, timeoutMs, headers }) => ({
              path,
              input,
              timeoutMs,
              headers,
            })),
          ),
        ).toEqual(plain(calls));
        const again = toBinary(CallRequestSchema, create(CallRequestSchema, { calls }));
        expect(
          plain(
            decodeBatchRequest(again).map(({ path, input, timeoutMs, headers }) => ({
              path,
              input,
              timeoutMs,
              headers,
            })),
          ),
        ).toEqual(plain(calls));
      }),
    );
  });

  it("encodeBatchResponse reads back through the generated CallResponse, and decodeBatchResponse reads what it writes", () => {
    fc.assert(
      fc.property(fc.array(result, { maxLength: 8 }), (results) => {
        const generated = fromBinary(CallResponseSchema, encodeBatchResponse(results));
        expect(
          plain(generated.results.map(({ status, body, headers }) => ({ status, body, headers }))),
        ).toEqual(plain(results));
        const again = toBinary(CallResponseSchema, create(CallResponseSchema, { results }));
        expect(
          plain(decodeBatchResponse(again).map(({ status, body, headers }) => ({ status, body, headers }))),
        ).toEqual(plain(results));
      }),
    );
  });

  it("a header called __proto__ stays a header (seen by fast-check: 782975936)", () => {
    const headers = JSON.parse('{"__proto__":"x"}') as Record<string, string>;
    const [back] = decodeBatchResponse(
      encodeBatchResponse([{ status: 200, body: new Uint8Array(0), headers }]),
    );
    expect(Object.keys(back!.headers)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(back!.headers)).toBe(Object.prototype);
  });

  it("bytes that are not an envelope are refused, not read as one", () => {
    expect(() => decodeBatchRequest(new Uint8Array([0x0a, 0x20, 1, 2]))).toThrow();
    expect(() => decodeBatchResponse(new Uint8Array([0x0a]))).toThrow();
  });

  it("the batch channel's messages are the declared ChannelRequest and ChannelResponse: a CallRequest with its id appended reads back as one, both ways", () => {
    fc.assert(
      fc.property(fc.array(call, { maxLength: 4 }), fc.integer({ min: 1, max: 0xffffffff }), (calls, id) => {
        const bytes = channelRequestOf(encodeBatchRequest(calls), id);
        const generated = fromBinary(ChannelRequestSchema, bytes);
        expect(generated.id).toBe(id);
        expect(
          plain(
            generated.calls.map(({ path, input, timeoutMs, headers }) => ({
              path,
              input,
              timeoutMs,
              headers,
            })),
          ),
        ).toEqual(plain(calls));
        const ours = decodeChannelRequest(bytes);
        expect(ours.id).toBe(id);
        expect(
          plain(
            ours.calls.map(({ path, input, timeoutMs, headers }) => ({ path, input, timeoutMs, headers })),
          ),
        ).toEqual(plain(calls));
      }),
    );
    fc.assert(
      fc.property(
        fc.array(result, { maxLength: 4 }),
        fc.integer({ min: 1, max: 0xffffffff }),
        bytes,
        (results, id, error) => {
          const generated = fromBinary(
            ChannelResponseSchema,
            encodeChannelResponse({ id, status: 200, results, error }),
          );
          expect(plain({ id: generated.id, status: generated.status, error: generated.error })).toEqual(
            plain({ id, status: 200, error }),
          );
          expect(
            plain(generated.results.map(({ status, body, headers }) => ({ status, body, headers }))),
          ).toEqual(plain(results));
          const again = toBinary(
            ChannelResponseSchema,
            create(ChannelResponseSchema, { id, status: 503, results, error }),
          );
          const ours = decodeChannelResponse(again);
          const back = ours.results.map(({ status, body, headers }) => ({ status, body, headers }));
          expect(plain({ id: ours.id, status: ours.status, error: ours.error, results: back })).toEqual(
            plain({ id, status: 503, error, results }),
          );
        },
      ),
    );
  });
});
