import { create, type DescMessage, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as contracts from "@funil/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { codecOf, unsupported } from "./codec.js";
import { type Json, toApiJson } from "./json.js";
import { message, plain, schemas } from "./test-support.js";
// protobuf-es as the services run it (@funil/rpc configures its strings), the reference read against.
import "./text-encoding.js";

describe("generated protobuf codec (the messages of a call without reflection)", () => {
  it("takes every message type of the contracts (none left to protobuf-es)", () => {
    expect(schemas.length).toBeGreaterThan(100);
    expect(schemas.filter((s) => unsupported(s)).map((s) => `${s.typeName}: ${unsupported(s)}`)).toEqual([]);
  });

  it("writes the bytes protobuf-es's toBinary writes, for any message of any contract type", () => {
    for (const schema of schemas)
      fc.assert(
        fc.property(message(schema), (m) => {
          expect(Buffer.from(codecOf(schema).encode(m))).toEqual(Buffer.from(toBinary(schema, m)));
        }),
        { numRuns: 25 },
      );
  });

  it("writes a message's init shape (no $typeName, zero fields left out) as the created message, so callers may skip create()", () => {
    for (const schema of schemas)
      fc.assert(
        fc.property(message(schema), (m) => {
          // An implicit-presence field at its zero is left out; an optional one set to "" is a value.
          const implicit = new Set(schema.fields.filter((f) => f.presence === 2).map((f) => f.localName));
          const zero = (v: unknown) =>
            v === "" || Object.is(v, 0) || v === 0n || v === false || (Array.isArray(v) && v.length === 0);
          const init = Object.fromEntries(
            Object.entries(m).filter(([k, v]) => k !== "$typeName" && !(implicit.has(k) && zero(v))),
          );
          expect(Buffer.from(codecOf(schema).encode(init as never))).toEqual(
            Buffer.from(toBinary(schema, m)),
          );
        }),
        { numRuns: 10 },
      );
  });

  it("reads back the message protobuf-es's fromBinary reads, for any message of any contract type", () => {
    for (const schema of schemas)
      fc.assert(
        fc.property(message(schema), (m) => {
          const bytes = toBinary(schema, m);
          expect(plain(codecOf(schema).decode(bytes))).toEqual(plain(fromBinary(schema, bytes)));
        }),
        { numRuns: 25 },
      );
  });

  it("merges a singular message or Struct that comes twice, and appends repeated ones, as protobuf-es does", () => {
    const schema: DescMessage = contracts.ContactSchema;
    fc.assert(
      fc.property(message(schema), message(schema), (a, b) => {
        const bytes = Buffer.concat([toBinary(schema, a), toBinary(schema, b)]);
        expect(plain(codecOf(schema).decode(bytes))).toEqual(plain(fromBinary(schema, bytes)));
      }),
      { numRuns: 200 },
    );
  });

  it("refuses malformed bytes with an error, never a hang or a crash; what it does read re-encodes", () => {
    for (const schema of [
      contracts.ContactSchema,
      contracts.ListContactsResponseSchema,
      contracts.CallRequestSchema,
    ])
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
          let decoded: unknown;
          try {
            decoded = codecOf(schema).decode(bytes);
          } catch (err) {
            expect(err).toBeInstanceOf(Error);
            return;
          }
          expect(() => toBinary(schema, decoded as never)).not.toThrow();
        }),
        { numRuns: 2000 },
      );
  });

  it("refuses a truncated message and a length past its end", () => {
    const schema = contracts.ContactSchema;
    const bytes = toBinary(schema, create(schema, { id: "ct_1", name: "Maria", tags: ["a"] }));
    expect(() => codecOf(schema).decode(bytes.subarray(0, bytes.length - 1))).toThrow(/cannot decode/);
    expect(() => codecOf(schema).decode(Uint8Array.from([10, 50, 65]))).toThrow(/cannot decode/);
  });

  it("refuses a string that is not UTF-8, as protobuf-es does (proto3 strings are validated)", () => {
    const bytes = Uint8Array.from([10, 2, 0xc3, 0x28]);
    expect(() => fromBinary(contracts.ContactSchema, bytes)).toThrow();
    expect(() => codecOf(contracts.ContactSchema).decode(bytes)).toThrow(/invalid UTF-8/);
    // A real U+FFFD is valid.
    expect(codecOf(contracts.ContactSchema).decode(Uint8Array.from([10, 3, 0xef, 0xbf, 0xbd])).id).toBe(
      "\uFFFD",
    );
  });

  it("stops at protobuf-es's recursion limit instead of overflowing the stack on nested JSON", () => {
    let deep: Json = 1;
    for (let i = 0; i < 150; i++) deep = { k: deep };
    const m = create(contracts.ContactSchema, { id: "ct_1", customFields: { deep } });
    const bytes = toBinary(contracts.ContactSchema, m);
    expect(() => codecOf(contracts.ContactSchema).decode(bytes)).toThrow(/recursion/);
  });

  it("keeps a Struct key called __proto__ as an own key both ways, instead of replacing the object's prototype", () => {
    const customFields = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}');
    const codec = codecOf(contracts.ContactSchema);
    const back = codec.decode(codec.encode(create(contracts.ContactSchema, { id: "ct_1", customFields })));
    expect(Object.keys(back.customFields!)).toEqual(["__proto__", "a"]);
    expect(Object.getPrototypeOf(back.customFields)).toBe(Object.prototype);
    expect((back.customFields as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses an int32 field given a value that is not one, as toBinary does", () => {
    const m = create(contracts.ListContactsRequestSchema, { workspaceId: "ws_1", limit: 1.5 });
    expect(() => toBinary(contracts.ListContactsRequestSchema, m)).toThrow();
    expect(() => codecOf(contracts.ListContactsRequestSchema).encode(m)).toThrow(/int32/);
  });
});

/** The reflective mapping the generated one replaced: the oracle of the test below. */
function reflectedApiJson(schema: DescMessage, message: unknown): Record<string, Json> {
  const scalarOf = (v: unknown): Json =>
    typeof v === "bigint" ? Number(v) : v === undefined ? null : (v as Json);
  const jsonType = (m: DescMessage) =>
    m.typeName === "google.protobuf.Struct" || m.typeName === "google.protobuf.Value";
  const out: Record<string, Json> = {};
  const m = message as Record<string, unknown>;
  for (const field of schema.fields) {
    const value = m[field.localName];
    if (field.fieldKind === "list")
      out[field.jsonName] = ((value as unknown[]) ?? []).map((item) =>
        field.listKind === "message" ? reflectedApiJson(field.message, item) : scalarOf(item),
      );
    else if (field.fieldKind === "message")
      out[field.jsonName] =
        value === undefined || value === null
          ? null
          : jsonType(field.message)
            ? (value as Json)
            : reflectedApiJson(field.message, value);
    else if (field.fieldKind === "map")
      out[field.jsonName] = Object.fromEntries(
        Object.entries((value as Record<string, unknown>) ?? {}).map(([k, v]) => [
          k,
          field.mapKind === "message" ? reflectedApiJson(field.message, v) : scalarOf(v),
        ]),
      );
    else out[field.jsonName] = scalarOf(value);
  }
  return out;
}

describe("toApiJson, generated per message type", () => {
  it("gives what walking the descriptor gave, key order included, for any message of any contract type", () => {
    for (const schema of schemas)
      fc.assert(
        fc.property(message(schema), (m) => {
          const json = toApiJson(schema, m as never);
          const expected = reflectedApiJson(schema, m);
          expect(plain(json)).toEqual(plain(expected));
          expect(Object.keys(json)).toEqual(Object.keys(expected));
        }),
        { numRuns: 15 },
      );
  });
});
