import { DomainError } from "@funil/errors";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { badTextIn, check, refuseBadText, text } from "./common.js";

/** Without NUL and surrogates, so nothing in it pairs with a surrogate put beside it. */
const clean = (s: string) =>
  [...s].filter((c) => c !== "\u0000" && c.length === 1 && !/[\uD800-\uDFFF]/.test(c)).join("");

/** A lone surrogate, high or low. */
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));

describe("text is kept as sent (docs/api/conventions.md §Text is kept as sent)", () => {
  it("every string of Unicode scalar values passes, astral, combining and right-to-left ones included", () => {
    const samples = ["😀", "e\u0301", "مرحبا", "שלום", "\u202Eabc", "𝔘𝔫𝔦", "\uFFFD", "\uFEFF", "\u{10FFFF}"];
    for (const s of samples) expect(badTextIn({ company: s, [s]: [s] })).toBeUndefined();
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        expect(badTextIn({ a: s.replaceAll("\u0000", ""), [s.replaceAll("\u0000", "") || "k"]: 1 })).toBe(
          undefined,
        );
      }),
    );
  });

  it("a lone surrogate anywhere, in a value or a key, is named by where it is", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }),
        loneSurrogate,
        fc.string({ unit: "binary" }),
        fc.boolean(),
        (before, lone, after, inKey) => {
          // A surrogate next to the lone one could pair with it: keep the neighbours away from that range.
          const text = `${clean(before)}|${lone}|${clean(after)}`;
          const value = inKey ? { customFields: { [text]: 1 } } : { tags: ["ok", text] };
          const bad = badTextIn(value);
          expect(bad?.path).toBe(inKey ? `customFields.${text}` : "tags.1");
          expect(bad?.message).toMatch(/lone surrogate/);
        },
      ),
    );
  });

  it("check() refuses it with validation_failed naming the field, whatever the schema", () => {
    const schema = text(200);
    expect(check(schema, "x\uD83D\uDE00y", "body")).toBe("x😀y");
    for (const value of ["x\ud800y", "\udfff", "a\uDE00\uD83D"]) {
      let thrown: unknown;
      try {
        refuseBadText({ company: value }, "body");
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(DomainError);
      expect((thrown as DomainError).code).toBe("validation_failed");
      expect((thrown as DomainError).details?.[0]?.path).toBe("body.company");
    }
  });
});
