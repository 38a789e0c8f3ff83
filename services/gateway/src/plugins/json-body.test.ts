import { isUtf8 } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { firstInvalidUtf8 } from "./json-body.js";

describe("firstInvalidUtf8 (docs/api/conventions.md §Text is kept as sent: invalid UTF-8 is refused, not replaced)", () => {
  it("finds nothing in well-formed UTF-8, whatever the characters", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (s) => {
        expect(firstInvalidUtf8(Buffer.from(s, "utf8"))).toBe(-1);
      }),
    );
  });

  it("agrees with Node's validator on any bytes, and the bytes before the one it finds are valid", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const at = firstInvalidUtf8(bytes);
        expect(at === -1).toBe(isUtf8(bytes));
        if (at >= 0) expect(isUtf8(bytes.subarray(0, at))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("names the lead byte of each kind of broken sequence", () => {
    const cases: Array<[number[], number]> = [
      [[0x61, 0x80], 1], // a lone continuation byte
      [[0x61, 0xc3], 1], // a sequence cut short
      [[0xc0, 0xaf], 0], // an overlong form
      [[0xed, 0xa0, 0x80], 0], // a surrogate written as UTF-8 (CESU-8)
      [[0xf4, 0x90, 0x80, 0x80], 0], // past U+10FFFF
      [[0x61, 0xe2, 0x82, 0x41], 1], // a third byte that is no continuation
      [[0xff], 0],
    ];
    for (const [bytes, at] of cases) expect(firstInvalidUtf8(Uint8Array.from(bytes)), String(bytes)).toBe(at);
  });
});
