import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EnvelopeReader, envelope, nextFrameId } from "./channel.js";

describe("batch channel envelopes (the Connect protocol's streaming envelope, proto/funil/rpc/v1/batch.proto)", () => {
  it("reads back every envelope written, whatever the chunk boundaries", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ flags: fc.nat({ max: 3 }), body: fc.uint8Array({ maxLength: 300 }) }), {
          maxLength: 6,
        }),
        fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 20 }),
        (envelopes, cuts) => {
          const bytes = Buffer.concat(envelopes.map((e) => envelope(e.flags, e.body)));
          const reader = new EnvelopeReader(300);
          const read = [];
          let at = 0;
          for (let i = 0; at < bytes.length; i++) {
            const size = Math.max(1, cuts[i % cuts.length]!);
            read.push(...reader.push(bytes.subarray(at, at + size)));
            at += size;
          }
          expect(read.map((e) => ({ flags: e.flags, body: Array.from(e.body) }))).toEqual(
            envelopes.map((e) => ({ flags: e.flags, body: Array.from(e.body) })),
          );
        },
      ),
    );
  });

  it("RPC_MAX_MESSAGE_BYTES: an envelope longer than the limit is seen from its header, before its body comes; the ones before it are read, nothing after", () => {
    const reader = new EnvelopeReader(100);
    const head = Buffer.alloc(5);
    head.writeUInt32BE(101, 1);
    const read = reader.push(Buffer.concat([envelope(0, Buffer.alloc(100)), head]));
    expect(read.map((e) => e.body.length)).toEqual([100]);
    expect(reader.oversized).toBe(101);
    expect(reader.push(envelope(0, Buffer.alloc(1)))).toEqual([]);
  });

  it("request ids wrap from 2^32 - 1 to 1, never 0", () => {
    expect(nextFrameId(1)).toBe(2);
    expect(nextFrameId(0xffffffff)).toBe(1);
  });
});
