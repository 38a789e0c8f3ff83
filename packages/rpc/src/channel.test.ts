import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerFrame, FrameReader, nextFrameId, requestFrame } from "./channel.js";

describe("batch channel frames (issue 7: the batches of a connection on one stream)", () => {
  it("reads back every frame written, whatever the chunk boundaries", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            id: fc.nat({ max: 0xffffffff }),
            status: fc.nat({ max: 599 }),
            body: fc.uint8Array({ maxLength: 300 }),
          }),
          {
            maxLength: 6,
          },
        ),
        fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        (frames, cuts, answers) => {
          const bytes = Buffer.concat(
            frames.map((f) => (answers ? answerFrame(f.id, f.status, f.body) : requestFrame(f.id, f.body))),
          );
          const reader = new FrameReader(answers, 300);
          const read = [];
          let at = 0;
          for (let i = 0; at < bytes.length; i++) {
            const size = Math.max(1, cuts[i % cuts.length]!);
            read.push(...reader.push(bytes.subarray(at, at + size)));
            at += size;
          }
          expect(read.map((f) => ({ id: f.id, status: f.status, body: Array.from(f.body) }))).toEqual(
            frames.map((f) => ({ id: f.id, status: answers ? f.status : 200, body: Array.from(f.body) })),
          );
        },
      ),
    );
  });

  it("RPC_MAX_MESSAGE_BYTES: a frame longer than the limit is named from its header, before its body comes; the frames before it are read, nothing after", () => {
    const reader = new FrameReader(false, 100);
    const head = Buffer.alloc(8);
    head.writeUInt32BE(7, 0);
    head.writeUInt32BE(101, 4);
    const frames = reader.push(Buffer.concat([requestFrame(6, Buffer.alloc(100)), head]));
    expect(frames.map((f) => f.id)).toEqual([6]);
    expect(reader.oversized).toEqual({ id: 7, length: 101 });
    expect(reader.push(requestFrame(8, Buffer.alloc(1)))).toEqual([]);
  });

  it("frame ids wrap from 2^32 - 1 to 1, never 0", () => {
    expect(nextFrameId(1)).toBe(2);
    expect(nextFrameId(0xffffffff)).toBe(1);
  });
});
