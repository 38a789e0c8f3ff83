import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import * as contracts from "@funil/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { apiJsonOfBinary, shortApiJsonOfBinary } from "./api-json-binary.js";
import { codecOf } from "./codec.js";
import { toApiJson } from "./json.js";
import { message, schemas } from "./test-support.js";
import "./text-encoding.js";

/** The long way: decode, map to the API's JSON, serialize. What the short way must always give. */
const longWay = (schema: DescMessage, bytes: Uint8Array) =>
  JSON.stringify(toApiJson(schema, codecOf(schema).decode(bytes) as never));

/** Both ways on the same bytes: the same text, or both throw. */
function sameText(schema: DescMessage, bytes: Uint8Array) {
  let expected: string | Error;
  try {
    expected = longWay(schema, bytes);
  } catch (err) {
    expected = err as Error;
  }
  if (expected instanceof Error) expect(() => apiJsonOfBinary(schema)(bytes)).toThrow(expected.message);
  else expect(apiJsonOfBinary(schema)(bytes).toString()).toBe(expected);
}

describe("a message's bytes straight to its API JSON text (the gateway's list pages)", () => {
  it("gives the text of decode, toApiJson and JSON.stringify, byte for byte, for any message of every contract type", () => {
    for (const schema of schemas)
      fc.assert(
        fc.property(message(schema), (m) => sameText(schema, toBinary(schema, m))),
        { numRuns: 25 },
      );
  });

  it("takes the short way (no message made) for every page the gateway sends on as it comes", () => {
    const pages: DescMessage[] = [
      contracts.ListContactsResponseSchema,
      contracts.ListOpportunitiesResponseSchema,
      contracts.ListTasksResponseSchema,
      contracts.ListInteractionsResponseSchema,
      contracts.ListLearnersResponseSchema,
      contracts.ListAppointmentsResponseSchema,
      contracts.ListAttemptsResponseSchema,
    ];
    for (const schema of pages)
      fc.assert(
        fc.property(message(schema), (m) => {
          const bytes = toBinary(schema, m);
          expect(shortApiJsonOfBinary(schema)(bytes)?.toString()).toBe(longWay(schema, bytes));
        }),
        { numRuns: 25 },
      );
  });

  it("gives the same text for a page of fifty contacts with accents, quotes, control characters and custom fields", () => {
    const schema = contracts.ListContactsResponseSchema;
    const data = Array.from({ length: 50 }, (_, i) => ({
      id: `ct_${i}`,
      name: `João "Zé" d'Ávila\n\t${i} \u0001\u001f\u007f 😀`,
      email: i % 2 ? `joao${i}@example.com` : undefined,
      tags: ["vip", "a\\b"],
      status: "active",
      customFields: { plano: "pro", "2": [1, null, true], nested: { x: -0, y: 1e21 } },
      createdAt: "2026-11-27T04:32:55.123Z",
      updatedAt: "2026-11-27T04:32:55.123Z",
      utm: { source: "google" },
    }));
    const bytes = toBinary(schema, create(schema, { data, nextCursor: "abc" }));
    expect(apiJsonOfBinary(schema)(bytes).toString()).toBe(longWay(schema, bytes));
    expect(JSON.parse(apiJsonOfBinary(schema)(bytes).toString()).data[0].name).toBe(data[0]!.name);
  });

  it("takes the decoder's answer where protobuf-es merges or repeats: a message sent twice, fields out of order", () => {
    const schema: DescMessage = contracts.ContactSchema;
    fc.assert(
      fc.property(message(schema), message(schema), (a, b) =>
        sameText(schema, Buffer.concat([toBinary(schema, a), toBinary(schema, b)])),
      ),
      { numRuns: 200 },
    );
  });

  it("refuses what the decoder refuses (malformed bytes, strings that are not UTF-8), with its error, and never hangs", () => {
    for (const schema of [contracts.ContactSchema, contracts.ListContactsResponseSchema])
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => sameText(schema, bytes)),
        { numRuns: 2000 },
      );
    const notUtf8 = Uint8Array.from([10, 2, 0xc3, 0x28]);
    expect(() => apiJsonOfBinary(contracts.ContactSchema)(notUtf8)).toThrow(/invalid UTF-8/);
    // A real U+FFFD is a character like any other.
    expect(
      JSON.parse(
        apiJsonOfBinary(contracts.ContactSchema)(Uint8Array.from([10, 3, 0xef, 0xbf, 0xbd])).toString(),
      ).id,
    ).toBe("\uFFFD");
  });
});
