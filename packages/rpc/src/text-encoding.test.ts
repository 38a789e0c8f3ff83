import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { ContactSchema } from "@funil/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeUtf8, encodeUtf8 } from "./text-encoding.js";

describe("protobuf strings through Buffer.from", () => {
  it("writes the bytes TextEncoder writes, for any string (unicode, lone surrogates, NUL)", () => {
    const te = new TextEncoder();
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" })), (s) => {
        expect(Buffer.from(encodeUtf8(s)).equals(Buffer.from(te.encode(s)))).toBe(true);
      }),
    );
  });

  it("reads back any string as written, a leading U+FEFF included (protobuf-es's own decoder drops it)", () => {
    expect(new TextDecoder().decode(encodeUtf8("\uFEFFJoão"))).toBe("João");
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (s) => {
        expect(decodeUtf8(encodeUtf8(`\uFEFF${s}`))).toBe(`\uFEFF${s}`);
        expect(decodeUtf8(encodeUtf8(s))).toBe(s);
      }),
    );
  });

  it("is what protobuf-es uses once @funil/rpc is loaded, and messages read back as written", () => {
    expect(getTextEncoding().encodeUtf8).toBe(encodeUtf8);
    expect(getTextEncoding().decodeUtf8).toBe(decodeUtf8);
    expect(
      fromBinary(ContactSchema, toBinary(ContactSchema, create(ContactSchema, { name: "\uFEFFJo" }))).name,
    ).toBe("\uFEFFJo");
    const contact = create(ContactSchema, { id: "ct_1", name: "João Ñandú 🚀", tags: ["ação", "日本"] });
    expect(fromBinary(ContactSchema, toBinary(ContactSchema, contact))).toMatchObject({
      name: "João Ñandú 🚀",
      tags: ["ação", "日本"],
    });
  });
});
