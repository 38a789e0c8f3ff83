import { isUtf8 } from "node:buffer";
import {
  type DescField,
  type DescMessage,
  fromBinary,
  type MessageShape,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";

/**
 * The binary protobuf codec of every RPC message this process reads or
 * writes: for each message type a pair of functions generated from its
 * descriptor, doing what protobuf-es's toBinary and fromBinary do with the
 * same bytes and the same message objects, without their reflection.
 *
 * Why: reflection costs, per message and on each side of a call, a descriptor
 * walk, a reflect wrapper and a Map lookup per field and a chunk array per
 * nested message; on a list of 50 that is a large share of crm's and the
 * gateway's CPU (bench/RESULTS.md). Generated code reads and writes each field
 * by name, in one scratch buffer.
 *
 * What it covers is what proto3 messages are made of: every scalar, open
 * enums, optional and implicit presence, repeated (packed or not), nested
 * messages (merged when a singular one comes twice, as protobuf-es does),
 * maps with string keys, and google.protobuf.Struct fields as JSON objects.
 * A message type that needs anything else (oneof, proto2 or editions
 * features, wrapper types, other map keys) keeps protobuf-es's own codec:
 * `codecOf` decides once per type. Unknown fields are skipped when reading
 * (protobuf-es keeps them in `$unknown`; no caller here forwards them).
 * codec.test.ts holds both directions equal to protobuf-es for every message
 * of the contracts, on generated messages and on random bytes.
 */
export interface Codec<D extends DescMessage> {
  encode(message: MessageShape<D>): Uint8Array;
  /** Throws on bytes that are not a well-formed message of the type. */
  decode(bytes: Uint8Array): MessageShape<D>;
  /** "generated" or "protobuf-es" (the type needs a feature the generated codec leaves to it). */
  readonly kind: "generated" | "protobuf-es";
}

const PROTO3 = 999; // google.protobuf.Edition.EDITION_PROTO3
const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT
export const MAX_DEPTH = 100; // protobuf-es's recursion limit
export const STRUCT = "google.protobuf.Struct";

enum Wire {
  Varint = 0,
  Bit64 = 1,
  LengthDelimited = 2,
  StartGroup = 3,
  EndGroup = 4,
  Bit32 = 5,
}

class DecodeError extends Error {}
const fail = (why: string): never => {
  throw new DecodeError(`cannot decode message: ${why}`);
};

/** Writes into one scratch buffer reused by every encode (encoding is synchronous). */
export class Writer {
  buf = Buffer.allocUnsafe(64 * 1024);
  pos = 0;

  ensure(n: number) {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  /** An unsigned 32-bit varint (tags, lengths, uint32, bool, non-negative int32). */
  uint32(value: number) {
    this.ensure(5);
    let v = value >>> 0;
    while (v > 127) {
      this.buf[this.pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  int32(value: number) {
    if ((value | 0) !== value) throw new Error(`invalid int32: ${value}`);
    if (value >= 0) this.uint32(value);
    else this.varint64(value >>> 0, -1);
  }

  sint32(value: number) {
    if ((value | 0) !== value) throw new Error(`invalid sint32: ${value}`);
    this.uint32((value << 1) ^ (value >> 31));
  }

  checkedUint32(value: number) {
    if (value >>> 0 !== value) throw new Error(`invalid uint32: ${value}`);
    this.uint32(value);
  }

  /** A varint of up to 64 bits, given as its low and high 32 bits. */
  varint64(lo: number, hi: number) {
    this.ensure(10);
    let l = lo >>> 0;
    let h = hi >>> 0;
    while (h > 0 || l > 127) {
      this.buf[this.pos++] = (l & 127) | 128;
      l = ((l >>> 7) | (h << 25)) >>> 0;
      h >>>= 7;
    }
    this.buf[this.pos++] = l;
  }

  int64(value: bigint | number | string) {
    const v = BigInt.asUintN(64, BigInt(value));
    this.varint64(Number(v & 0xffffffffn), Number(v >> 32n));
  }

  sint64(value: bigint | number | string) {
    const v = BigInt.asIntN(64, BigInt(value));
    const z = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
    this.varint64(Number(z & 0xffffffffn), Number(z >> 32n));
  }

  fixed64(value: bigint | number | string) {
    const v = BigInt.asUintN(64, BigInt(value));
    this.ensure(8);
    this.buf.writeUInt32LE(Number(v & 0xffffffffn), this.pos);
    this.buf.writeUInt32LE(Number(v >> 32n), this.pos + 4);
    this.pos += 8;
  }

  fixed32(value: number) {
    this.ensure(4);
    this.buf.writeUInt32LE(value >>> 0, this.pos);
    this.pos += 4;
  }

  sfixed32(value: number) {
    this.ensure(4);
    this.buf.writeInt32LE(value | 0, this.pos);
    this.pos += 4;
  }

  double(value: number) {
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  float(value: number) {
    this.ensure(4);
    this.buf.writeFloatLE(value, this.pos);
    this.pos += 4;
  }

  bool(value: boolean) {
    this.ensure(1);
    this.buf[this.pos++] = value ? 1 : 0;
  }

  /**
   * A string, length first. Short ASCII strings (most of ours: ids, names,
   * timestamps) are copied byte by byte behind a one-byte length; anything
   * else goes through Buffer's UTF-8 writer, which turns a lone surrogate
   * into U+FFFD as TextEncoder does.
   */
  string(value: string) {
    const n = value.length;
    if (n < 128) {
      this.ensure(1 + n * 3);
      const start = this.pos + 1;
      let p = start;
      const buf = this.buf;
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 128) break;
        buf[p++] = c;
      }
      if (i === n) {
        buf[this.pos] = n;
        this.pos = p;
        return;
      }
      const bytes = Buffer.byteLength(value);
      if (bytes < 128) {
        buf.write(value, start, "utf8");
        buf[this.pos] = bytes;
        this.pos = start + bytes;
        return;
      }
    }
    const bytes = Buffer.byteLength(value);
    this.uint32(bytes);
    this.ensure(bytes);
    this.buf.write(value, this.pos, "utf8");
    this.pos += bytes;
  }

  bytes(value: Uint8Array) {
    this.uint32(value.byteLength);
    this.ensure(value.byteLength);
    this.buf.set(value, this.pos);
    this.pos += value.byteLength;
  }

  /** Reserves one byte for the length of what follows; join() writes it (moving the content if longer). */
  fork(): number {
    this.ensure(1);
    return this.pos++;
  }

  join(at: number) {
    const len = this.pos - at - 1;
    if (len < 128) {
      this.buf[at] = len;
      return;
    }
    let size = 1;
    for (let v = len >>> 7; v > 0; v >>>= 7) size++;
    this.ensure(size - 1);
    this.buf.copy(this.buf, at + size, at + 1, this.pos);
    this.pos += size - 1;
    const end = this.pos;
    this.pos = at;
    this.uint32(len);
    this.pos = end;
  }

  /** The bytes written, in a buffer of their own; the scratch buffer is kept for the next encode. */
  finish(): Uint8Array {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    this.pos = 0;
    if (this.buf.length > 1024 * 1024) this.buf = Buffer.allocUnsafe(64 * 1024);
    return out;
  }
}

/** Reads one message's bytes; every read checks that it stays within them. */
export class Reader {
  pos = 0;
  readonly buf: Buffer;

  constructor(readonly bytes: Uint8Array) {
    this.buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** A varint's low 32 bits, unsigned (the rest of a longer varint is skipped). */
  uint32(): number {
    const buf = this.buf;
    let b = buf[this.pos++]!;
    let v = b & 127;
    if (b < 128) return v;
    b = buf[this.pos++]!;
    v |= (b & 127) << 7;
    if (b < 128) return v;
    b = buf[this.pos++]!;
    v |= (b & 127) << 14;
    if (b < 128) return v;
    b = buf[this.pos++]!;
    v |= (b & 127) << 21;
    if (b < 128) return v;
    b = buf[this.pos++]!;
    v |= (b & 15) << 28;
    if (b < 128) return v >>> 0;
    // An int32 written as a negative number takes ten bytes; the high ones carry nothing.
    for (let i = 0; i < 5; i++) if (buf[this.pos++]! < 128) return v >>> 0;
    return fail("varint too long or truncated");
  }

  int32(): number {
    return this.uint32() | 0;
  }

  sint32(): number {
    const v = this.uint32();
    return (v >>> 1) ^ -(v & 1);
  }

  /** A varint of up to 64 bits as [low, high] 32-bit halves. */
  private varint64(): [number, number] {
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      const b = buf[this.pos++]!;
      if (b === undefined) return fail("truncated varint");
      lo |= (b & 127) << shift;
      if (b < 128) return [lo >>> 0, 0];
    }
    let b = buf[this.pos++]!;
    if (b === undefined) return fail("truncated varint");
    lo |= (b & 15) << 28;
    hi = (b & 127) >> 4;
    if (b < 128) return [lo >>> 0, hi >>> 0];
    for (let shift = 3; shift <= 31; shift += 7) {
      b = buf[this.pos++]!;
      if (b === undefined) return fail("truncated varint");
      hi |= (b & 127) << shift;
      if (b < 128) return [lo >>> 0, hi >>> 0];
    }
    return fail("varint too long");
  }

  uint64(): bigint {
    const [lo, hi] = this.varint64();
    return hi === 0 ? BigInt(lo) : (BigInt(hi) << 32n) | BigInt(lo);
  }

  int64(): bigint {
    return BigInt.asIntN(64, this.uint64());
  }

  sint64(): bigint {
    const z = this.uint64();
    return (z >> 1n) ^ -(z & 1n);
  }

  fixed64(): bigint {
    this.need(8);
    const v = (BigInt(this.buf.readUInt32LE(this.pos + 4)) << 32n) | BigInt(this.buf.readUInt32LE(this.pos));
    this.pos += 8;
    return v;
  }

  sfixed64(): bigint {
    return BigInt.asIntN(64, this.fixed64());
  }

  fixed32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  sfixed32(): number {
    this.need(4);
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  double(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  float(): number {
    this.need(4);
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }

  bool(): boolean {
    const [lo, hi] = this.varint64();
    return lo !== 0 || hi !== 0;
  }

  /** Where a length-delimited value that starts here ends. */
  delimited(end: number): number {
    const len = this.uint32();
    const to = this.pos + len;
    if (to > end) fail("length beyond the message");
    return to;
  }

  /** A UTF-8 string, refused when it is not valid UTF-8 (as protobuf-es's strict decoding does). */
  string(end: number): string {
    const to = this.delimited(end);
    const text = this.buf.toString("utf8", this.pos, to);
    // Node's decoder turns every invalid sequence into U+FFFD; only then is it worth the check.
    if (text.includes("\uFFFD") && !isUtf8(this.buf.subarray(this.pos, to))) fail("invalid UTF-8");
    this.pos = to;
    return text;
  }

  /** A bytes field: a view of the message's bytes, as protobuf-es gives. */
  bytesField(end: number): Uint8Array {
    const to = this.delimited(end);
    const v = this.bytes.subarray(this.pos, to);
    this.pos = to;
    return v;
  }

  need(n: number) {
    if (this.pos + n > this.buf.length) fail("truncated");
  }

  /** Skips a field this type does not know. */
  skip(wire: number, fieldNo: number, end: number, depth: number): void {
    switch (wire) {
      case Wire.Varint:
        this.varint64();
        break;
      case Wire.Bit64:
        this.need(8);
        this.pos += 8;
        break;
      case Wire.LengthDelimited:
        this.pos = this.delimited(end);
        break;
      case Wire.Bit32:
        this.need(4);
        this.pos += 4;
        break;
      case Wire.StartGroup: {
        if (depth > MAX_DEPTH) fail("maximum recursion depth reached");
        for (;;) {
          if (this.pos >= end) fail("unterminated group");
          const tag = this.uint32();
          const no = tag >>> 3;
          const w = tag & 7;
          if (no === 0) fail("illegal tag: field no 0");
          if (w === Wire.EndGroup) {
            if (no !== fieldNo) fail("invalid end group tag");
            break;
          }
          this.skip(w, no, end, depth + 1);
        }
        break;
      }
      default:
        fail(`cannot skip wire type ${wire}`);
    }
    if (this.pos > end) fail("truncated");
  }
}

/**
 * A map entry or Struct key as an own property, "__proto__" too (as JSON.parse
 * does): assigning it would replace the object's prototype instead.
 */
function own(target: Record<string, unknown>, key: string, value: unknown) {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** google.protobuf.Struct from and to the JSON object protobuf-es shows for a Struct field. */
export const struct = {
  encode(w: Writer, json: { [k: string]: Json | undefined }) {
    for (const key in json) {
      if (!Object.hasOwn(json, key)) continue;
      // map<string, Value> fields = 1: an entry with its key (1) and its value (2).
      w.uint32(10);
      const entry = w.fork();
      w.uint32(10);
      w.string(key);
      w.uint32(18);
      const value = w.fork();
      struct.encodeValue(w, json[key]);
      w.join(value);
      w.join(entry);
    }
  },

  encodeValue(w: Writer, v: Json | undefined) {
    switch (typeof v) {
      case "number":
        w.uint32(17);
        w.double(v);
        return;
      case "string":
        w.uint32(26);
        w.string(v);
        return;
      case "boolean":
        w.uint32(32);
        w.bool(v);
        return;
      case "object": {
        if (v === null) {
          w.uint32(8);
          w.uint32(0);
          return;
        }
        w.uint32(Array.isArray(v) ? 50 : 42);
        const at = w.fork();
        if (Array.isArray(v))
          for (const item of v) {
            w.uint32(10);
            const i = w.fork();
            struct.encodeValue(w, item);
            w.join(i);
          }
        else struct.encode(w, v);
        w.join(at);
        return;
      }
      // undefined (or anything else): a Value with no kind, read back as null.
    }
  },

  decode(r: Reader, end: number, depth: number, into?: { [k: string]: Json }): { [k: string]: Json } {
    if (depth > MAX_DEPTH) fail("maximum recursion depth reached");
    const json: { [k: string]: Json } = into ?? {};
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag === 10) {
        const entryEnd = r.delimited(end);
        let key = "";
        let value: Json = null;
        while (r.pos < entryEnd) {
          const t = r.uint32();
          if (t === 10) key = r.string(entryEnd);
          else if (t === 18) value = struct.decodeValue(r, r.delimited(entryEnd), depth + 2);
          else skipOrFail(r, t, entryEnd, depth + 1);
        }
        if (r.pos !== entryEnd) fail("truncated map entry");
        own(json, key, value);
      } else skipOrFail(r, tag, end, depth);
    }
    if (r.pos !== end) fail("truncated");
    return json;
  },

  /** The Value's last kind wins, as a oneof's does; a message kind read twice is merged. */
  decodeValue(r: Reader, end: number, depth: number): Json {
    if (depth > MAX_DEPTH) fail("maximum recursion depth reached");
    let value: Json = null;
    while (r.pos < end) {
      const tag = r.uint32();
      switch (tag) {
        case 8:
          r.int32();
          value = null;
          break;
        case 17:
          value = r.double();
          break;
        case 26:
          value = r.string(end);
          break;
        case 32:
          value = r.bool();
          break;
        case 42: {
          const into =
            value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
          value = struct.decode(r, r.delimited(end), depth + 1, into);
          break;
        }
        case 50: {
          const e = r.delimited(end);
          const list: Json[] = Array.isArray(value) ? value : [];
          while (r.pos < e) {
            const t = r.uint32();
            if (t === 10) list.push(struct.decodeValue(r, r.delimited(e), depth + 2));
            else skipOrFail(r, t, e, depth + 1);
          }
          if (r.pos !== e) fail("truncated list");
          value = list;
          break;
        }
        default:
          skipOrFail(r, tag, end, depth);
      }
    }
    if (r.pos !== end) fail("truncated");
    return value;
  },
};

/** A tag this type does not read: skipped if it is well formed, refused otherwise. */
export function skipOrFail(r: Reader, tag: number, end: number, depth: number) {
  const no = tag >>> 3;
  const wire = tag & 7;
  if (no === 0) fail("illegal tag: field no 0");
  if (wire === Wire.EndGroup) fail("unexpected end group tag");
  r.skip(wire, no, end, depth);
}

/** For each scalar type: its wire type, the Writer and Reader methods, and the test of its zero. */
export const scalars: Record<
  ScalarType,
  { wire: Wire; write: string; read: string; zero: (v: string) => string }
> = {
  [ScalarType.DOUBLE]: {
    wire: Wire.Bit64,
    write: "double",
    read: "double()",
    zero: (v) => `Object.is(${v}, 0)`,
  },
  [ScalarType.FLOAT]: {
    wire: Wire.Bit32,
    write: "float",
    read: "float()",
    zero: (v) => `Object.is(${v}, 0)`,
  },
  [ScalarType.INT64]: { wire: Wire.Varint, write: "int64", read: "int64()", zero: (v) => `${v} == 0` },
  [ScalarType.UINT64]: { wire: Wire.Varint, write: "int64", read: "uint64()", zero: (v) => `${v} == 0` },
  [ScalarType.INT32]: { wire: Wire.Varint, write: "int32", read: "int32()", zero: (v) => `${v} === 0` },
  [ScalarType.FIXED64]: { wire: Wire.Bit64, write: "fixed64", read: "fixed64()", zero: (v) => `${v} == 0` },
  [ScalarType.FIXED32]: {
    wire: Wire.Bit32,
    write: "fixed32",
    read: "fixed32()",
    zero: (v) => `${v} === 0`,
  },
  [ScalarType.BOOL]: { wire: Wire.Varint, write: "bool", read: "bool()", zero: (v) => `${v} === false` },
  [ScalarType.STRING]: {
    wire: Wire.LengthDelimited,
    write: "string",
    read: "string(end)",
    zero: (v) => `${v} === ""`,
  },
  [ScalarType.BYTES]: {
    wire: Wire.LengthDelimited,
    write: "bytes",
    read: "bytesField(end)",
    zero: (v) => `${v}.byteLength === 0`,
  },
  [ScalarType.UINT32]: {
    wire: Wire.Varint,
    write: "checkedUint32",
    read: "uint32()",
    zero: (v) => `${v} === 0`,
  },
  [ScalarType.SFIXED32]: {
    wire: Wire.Bit32,
    write: "sfixed32",
    read: "sfixed32()",
    zero: (v) => `${v} === 0`,
  },
  [ScalarType.SFIXED64]: {
    wire: Wire.Bit64,
    write: "fixed64",
    read: "sfixed64()",
    zero: (v) => `${v} == 0`,
  },
  [ScalarType.SINT32]: { wire: Wire.Varint, write: "sint32", read: "sint32()", zero: (v) => `${v} === 0` },
  [ScalarType.SINT64]: { wire: Wire.Varint, write: "sint64", read: "sint64()", zero: (v) => `${v} == 0` },
};

export const is64 = (t: ScalarType) =>
  t === ScalarType.INT64 ||
  t === ScalarType.UINT64 ||
  t === ScalarType.FIXED64 ||
  t === ScalarType.SFIXED64 ||
  t === ScalarType.SINT64;

const WRAPPERS = /^google\.protobuf\.(Double|Float|Int64|UInt64|Int32|UInt32|Bool|String|Bytes)Value$/;

/** Why the generated codec leaves `schema` to protobuf-es, or undefined when it can take it. */
export function unsupported(schema: DescMessage, seen = new Set<DescMessage>()): string | undefined {
  if (seen.has(schema) || schema.typeName === STRUCT) return undefined;
  seen.add(schema);
  if (schema.file.edition !== PROTO3) return `${schema.typeName} is not proto3`;
  if (schema.oneofs.length > 0) return `${schema.typeName} has a oneof`;
  for (const field of schema.fields) {
    if (field.fieldKind === "enum" && !field.enum.open) return `${field} is a closed enum`;
    if (field.fieldKind === "map" && field.mapKey !== ScalarType.STRING)
      return `${field} has non-string keys`;
    if (field.fieldKind === "map" && field.mapKind === "enum" && !field.enum.open)
      return `${field} is a closed enum`;
    if (field.fieldKind === "list" && field.listKind === "enum" && !field.enum.open)
      return `${field} is a closed enum`;
    const message =
      field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")
        ? field.message
        : field.fieldKind === "map" && field.mapKind === "message"
          ? field.message
          : undefined;
    if (!message) continue;
    if ("delimitedEncoding" in field && field.delimitedEncoding) return `${field} is delimited`;
    if (WRAPPERS.test(message.typeName)) return `${field} is a wrapper type`;
    if (message.typeName === STRUCT && field.fieldKind !== "message")
      return `${field} is a list or map of Struct`;
    const why = unsupported(message, seen);
    if (why) return why;
  }
  return undefined;
}

/** Every message type reachable from `root` (Struct aside), each once, numbered. */
export function reachable(root: DescMessage): DescMessage[] {
  const all: DescMessage[] = [];
  const visit = (m: DescMessage) => {
    if (m.typeName === STRUCT || all.includes(m)) return;
    all.push(m);
    for (const f of m.fields)
      if (f.fieldKind === "message" || f.fieldKind === "list" || f.fieldKind === "map")
        if (f.message) visit(f.message);
  };
  visit(root);
  return all;
}

export const tagOf = (no: number, wire: Wire) => ((no << 3) | wire) >>> 0;
const prop = (name: string) => `[${JSON.stringify(name)}]`;

/** A scalar (or enum, as int32) field's scalar type. */
export const scalarOf = (f: DescField): ScalarType =>
  f.fieldKind === "enum" || (f.fieldKind === "list" && f.listKind === "enum")
    ? ScalarType.INT32
    : (f.scalar ?? ScalarType.INT32);

/** The value as read, as the message holds it (int64 as a string when the field says so). */
const local = (f: DescField, read: string) =>
  "longAsString" in f && f.longAsString && is64(scalarOf(f)) ? `String(${read})` : read;

function encoderOf(m: DescMessage, index: Map<DescMessage, number>): string {
  const lines: string[] = [`function enc${index.get(m)}(w, m) {`, "let v;"];
  for (const f of [...m.fields].sort((a, b) => a.number - b.number)) {
    lines.push(`v = m${prop(f.localName)};`);
    switch (f.fieldKind) {
      case "scalar":
      case "enum": {
        const s = scalars[scalarOf(f)];
        const set =
          f.presence === IMPLICIT
            ? f.fieldKind === "enum"
              ? `v !== undefined && v !== ${f.enum.values[0]?.number ?? 0}`
              : `v !== undefined && !(${s.zero("v")})`
            : "v !== undefined";
        lines.push(`if (${set}) { w.uint32(${tagOf(f.number, s.wire)}); w.${s.write}(v); }`);
        break;
      }
      case "message": {
        const body =
          f.message.typeName === STRUCT ? "$.struct.encode(w, v)" : `enc${index.get(f.message)}(w, v)`;
        lines.push(
          `if (v !== undefined && v !== null) { w.uint32(${tagOf(f.number, Wire.LengthDelimited)}); const at = w.fork(); ${body}; w.join(at); }`,
        );
        break;
      }
      case "list": {
        if (f.listKind === "message") {
          lines.push(
            `if (v !== undefined) for (let i = 0; i < v.length; i++) { w.uint32(${tagOf(f.number, Wire.LengthDelimited)}); const at = w.fork(); enc${index.get(f.message)}(w, v[i]); w.join(at); }`,
          );
          break;
        }
        const s = scalars[scalarOf(f)];
        if (f.packed && s.wire !== Wire.LengthDelimited)
          lines.push(
            `if (v !== undefined && v.length > 0) { w.uint32(${tagOf(f.number, Wire.LengthDelimited)}); const at = w.fork(); for (let i = 0; i < v.length; i++) w.${s.write}(v[i]); w.join(at); }`,
          );
        else
          lines.push(
            `if (v !== undefined) for (let i = 0; i < v.length; i++) { w.uint32(${tagOf(f.number, s.wire)}); w.${s.write}(v[i]); }`,
          );
        break;
      }
      case "map": {
        const value =
          f.mapKind === "message"
            ? `w.uint32(18); const vat = w.fork(); enc${index.get(f.message)}(w, v[k]); w.join(vat);`
            : `w.uint32(${tagOf(2, scalars[scalarOf(f)].wire)}); w.${scalars[scalarOf(f)].write}(v[k]);`;
        lines.push(
          `if (v !== undefined) for (const k in v) { if (!Object.hasOwn(v, k)) continue; w.uint32(${tagOf(f.number, Wire.LengthDelimited)}); const at = w.fork(); w.uint32(10); w.string(k); ${value} w.join(at); }`,
        );
        break;
      }
    }
  }
  lines.push("}");
  return lines.join("\n");
}

/** The zero message protobuf-es creates: implicit fields at their zero, lists and maps empty. */
function zeroOf(m: DescMessage): string {
  const parts = [`$typeName: ${JSON.stringify(m.typeName)}`];
  for (const f of m.fields) {
    if (f.fieldKind === "list") parts.push(`${prop(f.localName)}: []`);
    else if (f.fieldKind === "map") parts.push(`${prop(f.localName)}: {}`);
    else if (f.fieldKind === "enum" && f.presence === IMPLICIT)
      parts.push(`${prop(f.localName)}: ${f.enum.values[0]?.number ?? 0}`);
    else if (f.fieldKind === "scalar" && f.presence === IMPLICIT) {
      const t = f.scalar;
      const zero =
        t === ScalarType.STRING
          ? '""'
          : t === ScalarType.BOOL
            ? "false"
            : t === ScalarType.BYTES
              ? "new Uint8Array(0)"
              : is64(t)
                ? "longAsString" in f && f.longAsString
                  ? '"0"'
                  : "0n"
                : "0";
      parts.push(`${prop(f.localName)}: ${zero}`);
    }
  }
  return `{ ${parts.join(", ")} }`;
}

function decoderOf(m: DescMessage, index: Map<DescMessage, number>): string {
  const lines = [
    `function dec${index.get(m)}(r, end, depth, m) {`,
    `if (depth > ${MAX_DEPTH}) $.fail("maximum recursion depth reached");`,
    `if (m === undefined) m = ${zeroOf(m)};`,
    "while (r.pos < end) {",
    "const tag = r.uint32();",
    "switch (tag) {",
  ];
  const nested = (f: DescField & { message: DescMessage }, into: string) =>
    f.message.typeName === STRUCT
      ? `$.struct.decode(r, r.delimited(end), depth + 1, ${into})`
      : `dec${index.get(f.message)}(r, r.delimited(end), depth + 1, ${into})`;
  for (const f of m.fields) {
    const name = prop(f.localName);
    switch (f.fieldKind) {
      case "scalar":
      case "enum": {
        const s = scalars[scalarOf(f)];
        lines.push(`case ${tagOf(f.number, s.wire)}: m${name} = ${local(f, `r.${s.read}`)}; break;`);
        break;
      }
      case "message":
        lines.push(
          `case ${tagOf(f.number, Wire.LengthDelimited)}: m${name} = ${nested(f, `m${name}`)}; break;`,
        );
        break;
      case "list": {
        if (f.listKind === "message") {
          lines.push(
            `case ${tagOf(f.number, Wire.LengthDelimited)}: m${name}.push(${nested(f, "undefined")}); break;`,
          );
          break;
        }
        const s = scalars[scalarOf(f)];
        const item = local(f, `r.${s.read}`);
        lines.push(`case ${tagOf(f.number, s.wire)}: m${name}.push(${item}); break;`);
        if (s.wire !== Wire.LengthDelimited)
          lines.push(
            `case ${tagOf(f.number, Wire.LengthDelimited)}: { const e = r.delimited(end); const l = m${name}; while (r.pos < e) l.push(${item}); if (r.pos !== e) $.fail("truncated packed field"); break; }`,
          );
        break;
      }
      case "map": {
        const s = f.mapKind === "message" ? undefined : scalars[scalarOf(f)];
        const zero = f.mapKind === "message" ? "undefined" : zeroValueOf(f);
        const readValue =
          f.mapKind === "message"
            ? `case 18: val = dec${index.get(f.message)}(r, r.delimited(e), depth + 2, undefined); break;`
            : `case ${tagOf(2, s!.wire)}: val = ${local(f, `r.${s!.read.replace("(end)", "(e)")}`)}; break;`;
        const missing = f.mapKind === "message" ? `if (val === undefined) val = ${zeroOf(f.message)};` : "";
        lines.push(
          `case ${tagOf(f.number, Wire.LengthDelimited)}: { const e = r.delimited(end); let key = ""; let val = ${zero}; while (r.pos < e) { const t = r.uint32(); switch (t) { case 10: key = r.string(e); break; ${readValue} default: $.skipOrFail(r, t, e, depth + 1); } } if (r.pos !== e) $.fail("truncated map entry"); ${missing} $.own(m${name}, key, val); break; }`,
        );
        break;
      }
    }
  }
  lines.push(
    "default: $.skipOrFail(r, tag, end, depth);",
    "}",
    "}",
    'if (r.pos !== end) $.fail("truncated");',
    "return m;",
    "}",
  );
  return lines.join("\n");
}

function zeroValueOf(f: DescField): string {
  const t = scalarOf(f);
  if (f.fieldKind === "map" && f.mapKind === "enum") return String(f.enum.values[0]?.number ?? 0);
  if (t === ScalarType.STRING) return '""';
  if (t === ScalarType.BOOL) return "false";
  if (t === ScalarType.BYTES) return "new Uint8Array(0)";
  if (is64(t)) return "longAsString" in f && f.longAsString ? '"0"' : "0n";
  return "0";
}

const writer = new Writer();
const helpers = {
  struct,
  skipOrFail,
  fail,
  own,
};

function generated<D extends DescMessage>(schema: D): Codec<D> {
  const all = reachable(schema);
  const index = new Map(all.map((m, i) => [m, i]));
  const source = [
    ...all.map((m) => encoderOf(m, index)),
    ...all.map((m) => decoderOf(m, index)),
    "return { enc: enc0, dec: dec0 };",
  ].join("\n");
  const { enc, dec } = new Function("$", source)(helpers) as {
    enc: (w: Writer, m: unknown) => void;
    dec: (r: Reader, end: number, depth: number, m: undefined) => MessageShape<D>;
  };
  return {
    kind: "generated",
    encode(message) {
      writer.pos = 0;
      try {
        enc(writer, message);
      } catch (err) {
        writer.pos = 0;
        throw err;
      }
      return writer.finish();
    },
    decode(bytes) {
      const r = new Reader(bytes);
      return dec(r, bytes.byteLength, 0, undefined);
    },
  };
}

const codecs = new WeakMap<DescMessage, Codec<DescMessage>>();

/** The codec of a message type, generated on first use (or protobuf-es's, see `unsupported`). */
export function codecOf<D extends DescMessage>(schema: D): Codec<D> {
  let codec = codecs.get(schema) as Codec<D> | undefined;
  if (!codec) {
    codec = unsupported(schema)
      ? {
          kind: "protobuf-es",
          encode: (message) => toBinary(schema, message),
          decode: (bytes) => fromBinary(schema, bytes),
        }
      : generated(schema);
    codecs.set(schema, codec as unknown as Codec<DescMessage>);
  }
  return codec;
}
