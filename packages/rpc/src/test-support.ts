// Helpers of this package's tests only (left out of the build: tsconfig.build.json).
import { connect, createServer, type Socket } from "node:net";
import { create, type DescField, type DescMessage, type MessageShape, ScalarType } from "@bufbuild/protobuf";
import * as contracts from "@funil/contracts";
import fc from "fast-check";
import type { Json } from "./json.js";

/**
 * A value with its bytes as plain arrays, so that a Buffer and a Uint8Array of the same bytes compare
 * equal (protobuf-es gives Uint8Array views where the generated codec gives Buffer views).
 */
export const plain = (value: unknown): unknown =>
  ArrayBuffer.isView(value)
    ? Array.from(value as Uint8Array)
    : Array.isArray(value)
      ? value.map(plain)
      : value && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
        : value;

/**
 * A TCP proxy in front of a port: counts the connections made through it, and can freeze (stop
 * forwarding in both directions without closing anything, as a frozen process or a network that drops
 * packets would).
 */
export async function tcpProxy(target: number) {
  const sockets: Socket[] = [];
  let connections = 0;
  let frozen = false;
  const server = createServer((inbound) => {
    connections++;
    const outbound = connect(target, "127.0.0.1");
    sockets.push(inbound, outbound);
    for (const s of [inbound, outbound]) s.on("error", () => {});
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    if (frozen) for (const s of [inbound, outbound]) s.pause();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as { port: number }).port,
    get connections() {
      return connections;
    },
    freeze() {
      frozen = true;
      for (const s of sockets) {
        s.unpipe();
        s.pause();
      }
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Every message type of the contracts: what the services send each other. */
export const schemas = (Object.values(contracts) as unknown[]).filter(
  (v): v is DescMessage => typeof v === "object" && v !== null && (v as DescMessage).kind === "message",
);

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 8 }),
  // ASCII up to and past the one-byte length, and strings whose UTF-8 passes 127 bytes while their
  // length does not.
  fc.string({ unit: "binary-ascii", minLength: 120, maxLength: 140 }),
  fc.string({ unit: fc.constantFrom("é", "😀", "\ud800", "a"), minLength: 40, maxLength: 70 }),
);
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const uint64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });

function scalar(type: ScalarType): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 16 });
    case ScalarType.DOUBLE:
      return fc.double();
    case ScalarType.FLOAT:
      return fc.float();
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return int64;
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return uint64;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.nat({ max: 0xffffffff });
    default:
      return fc.integer();
  }
}

// protobuf-es drops a key called __proto__ (it assigns it); the codec keeps it as an own key: that one
// difference is a test of its own below.
export const key = text.filter((k) => k !== "__proto__");
const jsonValue: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    text,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(key, tie("value"), { maxKeys: 3 }),
  ),
})).value;
export const jsonObject = fc.dictionary(key, jsonValue, { maxKeys: 4 });

/** A message of `schema` as protobuf-es's create() makes it, with any field set or not. */
export function message(schema: DescMessage, depth = 0): fc.Arbitrary<MessageShape<DescMessage>> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of schema.fields) fields[f.localName] = fieldValue(f, depth);
  return fc
    .record(fields, { requiredKeys: [] })
    .map((init) => create(schema, init as never) as MessageShape<DescMessage>);
}

function fieldValue(f: DescField, depth: number): fc.Arbitrary<unknown> {
  const nested = (m: DescMessage) =>
    m.typeName === "google.protobuf.Struct"
      ? jsonObject
      : depth > 2
        ? fc.constant(undefined)
        : message(m, depth + 1);
  switch (f.fieldKind) {
    case "scalar":
      return scalar(f.scalar);
    case "enum":
      return fc.integer();
    case "message":
      return nested(f.message);
    case "list":
      return fc.array(
        f.listKind === "message"
          ? nested(f.message)
          : f.listKind === "enum"
            ? fc.integer()
            : scalar(f.scalar),
        { maxLength: 3 },
      );
    case "map":
      return fc.dictionary(
        key,
        f.mapKind === "message" ? nested(f.message) : f.mapKind === "enum" ? fc.integer() : scalar(f.scalar),
        { maxKeys: 3 },
      );
  }
}
