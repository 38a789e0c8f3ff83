import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerFrame, FrameReader, MAX_FRAME, nextFrameId, requestFrame } from "./channel.js";

describe("batch channel frames (the batches of a connection on one stream)", () => {
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
          const reader = new FrameReader(answers);
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

  it("refuses a frame longer than the limit from its header, before its body comes", () => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(1, 0);
    head.writeUInt32BE(MAX_FRAME + 1, 4);
    expect(() => new FrameReader(false).push(head)).toThrow(/over the limit/);
  });

  it("frame ids wrap from 2^32 - 1 to 1, never 0", () => {
    expect(nextFrameId(1)).toBe(2);
    expect(nextFrameId(0xffffffff)).toBe(1);
  });
});
